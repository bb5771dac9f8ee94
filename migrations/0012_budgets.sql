-- Budgets and rate limits (docs/spec.md section 2.9): the counters of the calls a policy's budgets and
-- rate limits select, shared by every replica. Every change to a counter is ONE conditional statement
-- (src/budgets/store.ts): an upsert that adds a call only while the result stays within the limit, so
-- any number of concurrent calls on any number of replicas are counted exactly, never read first and
-- written after. Several counters of one call change in one transaction: all, or none.

-- One row per budget, counter key and window. `counted` is exact (numeric): the amounts of the
-- counted calls (`sum`), or 1 per call, or the spend reported to POST /usage (`max_usd`).
create table budget_counters (
  budget       name_text not null,          -- the budget's id
  scope_key    text not null,               -- user:SUB, team:TEAM, agent:AGENT, run:SUB<LF>RUN, global
  window_start timestamptz not null,        -- the window, by the database clock (UTC calendar units, or fixed lengths from the epoch)
  window_end   timestamptz not null,
  counted      numeric not null,
  calls        bigint not null,             -- the calls counted (for a `max_usd` budget: the reports)
  primary key (budget, scope_key, window_start, window_end),
  constraint budget_counters_counted check (counted >= 0),
  constraint budget_counters_calls check (calls >= 0),
  constraint budget_counters_window check (window_end > window_start),
  constraint budget_counters_key check (char_length(scope_key) between 1 and 1100)
) with (fillfactor = 70);                   -- room on the page: an increment is a HOT update (no index changes)

-- The sweep deletes the windows that have ended.
create index budget_counters_ended on budget_counters (window_end);

-- One row per rate limit and counter key: the times of its last allowed calls, oldest first, at most
-- the limit's `calls` of them (a sliding window: a call is allowed while fewer than `calls` of them
-- are within `per` of now). The sweep deletes a row once `expires_at` has passed.
create table rate_limit_calls (
  rate_limit   name_text not null,
  scope_key    text not null,
  times        timestamptz[] not null,
  expires_at   timestamptz not null,        -- the newest call plus the window: past it, the row counts nothing
  primary key (rate_limit, scope_key),
  constraint rate_limit_calls_times check (cardinality(times) between 1 and 1000),
  constraint rate_limit_calls_key check (char_length(scope_key) between 1 and 1100)
) with (fillfactor = 70);
-- No index on expires_at: it changes with every call, and an index on it would make every call a
-- non-HOT update. The sweep reads the table (which it keeps small) once a minute instead.

-- POST /usage is idempotent by Idempotency-Key, kept like the other routes' keys.
alter table idempotency_keys drop constraint idempotency_keys_route;
alter table idempotency_keys add constraint idempotency_keys_route check (route in ('decide', 'approvals', 'usage'));
