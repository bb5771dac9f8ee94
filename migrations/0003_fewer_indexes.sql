-- Two indexes fewer, each written by every create and every grant (a grant is not a HOT update: it
-- changes the status, which partial indexes name, so it writes a new entry into every index).
--
-- The pending queue (list?status=pending) and the sweeper's search for lapsed rows both look only at
-- live rows: approvals_live_request (0001), the unique index over exactly the live rows, serves them.
-- Reading all live rows and sorting them is bounded by what can be live at once (MAX_PENDING_APPROVALS
-- per requester, and grants for GRANT_TTL), never by the history. The store writes those statuses as
-- literals, so that even a generic plan can prove it may use the partial index.

drop index approvals_listing_pending;
drop index approvals_live_expiry;
