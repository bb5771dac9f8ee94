-- Idempotency-Key on /decide with approval_id and on POST /approvals (docs/spec.md section 5.3): the
-- answer given to a caller's key, kept 24 hours, so a retry after a lost answer reads that answer
-- instead of acting again (a redeem retried blindly would read `consumed`). The key is locked
-- (a transaction-scoped advisory lock), the request acted on and its answer written in one
-- transaction: a row exists only for an answer that was given, and a concurrent retry with the same
-- key waits for the lock, then reads that answer.

create table idempotency_keys (
  sub        name_text not null,
  route      text not null,
  key        text not null,
  body_hash  sha256_text not null,
  status     integer not null,
  response   text not null,
  created_at timestamptz not null default now(),
  primary key (sub, route, key),
  constraint idempotency_keys_route check (route in ('decide', 'approvals')),
  constraint idempotency_keys_key check (key ~ '^[!-~]{1,255}$'),
  constraint idempotency_keys_status check (status between 200 and 499)
);

-- The sweep deletes keys older than 24 hours by this index.
create index idempotency_keys_created on idempotency_keys (created_at);
