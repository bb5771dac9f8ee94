-- Two indexes fewer, each written by every create and every grant (a grant is not a HOT update: it
-- changes the status, which partial indexes name, so it writes a new entry into every index).
--
-- The pending queue (list?status=pending) and the sweeper's search for lapsed rows both look only at
-- live rows: approvals_live_request (0001), the unique index over exactly the live rows, serves them.
-- They read every live row (pending or granted, and lapsed ones not yet swept) and sort or filter
-- them, so their cost grows with what is live, never with the history. The store writes those
-- statuses as literals, so that even a generic plan can prove it may use the partial index, and
-- fences the list's live rows (MATERIALIZED) so the planner cannot walk the history instead.

drop index approvals_listing_pending;
drop index approvals_live_expiry;
