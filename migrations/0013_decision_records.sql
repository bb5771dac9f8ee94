-- The decision store (DECISION_STORE=postgres, docs/operations.md "Decision records"): one row per
-- answered /decide, written in batches off the hot path (src/decisions/writer.ts). Partitioned by
-- day (UTC) on the decision time, natively (PostgreSQL declarative RANGE partitioning), so that
-- retention (DECISION_RETENTION) drops whole partitions: a DROP TABLE frees the day at once, with no
-- dead rows for vacuum, where a DELETE would rewrite the table's worth of rows it removes. The
-- service creates the partitions ahead (today and the next two days) and drops those behind
-- (src/decisions/partitions.ts); a row outside every partition fails its batch, which is counted.
--
-- The arguments, claims, context and run view are kept only with LOG_ARGS, redacted as the
-- decision log line is (src/http/decision-facts.ts); null otherwise: such a decision cannot be
-- decided again (docs/policy-changes.md).

create table decisions (
  id            uuid not null,
  decided_at    timestamptz not null,
  tool          text not null,
  user_sub      text not null,
  team          text,
  agent         text,
  roles         jsonb not null,
  env           text,
  run_id        text,
  decision      text not null,
  rule          text not null,
  -- A require_approval's approval kind.
  kind          text,
  -- The digests of the files of the set that decided, in load order.
  policies      jsonb not null,
  -- Set when the request redeemed (or tried to redeem) an approval.
  approval_id   text,
  -- An Idempotency-Key retry's row: the answer of an earlier decision sent again.
  replayed      boolean not null default false,
  args          jsonb,
  claims        jsonb,
  context       jsonb,
  run           jsonb,
  -- A partitioned table's unique keys include the partition key.
  primary key (decided_at, id),
  constraint decisions_decision check (decision in ('allow', 'deny', 'abort', 'require_approval')),
  constraint decisions_roles check (jsonb_typeof(roles) = 'array'),
  constraint decisions_policies check (jsonb_typeof(policies) = 'array')
) partition by range (decided_at);

-- GET /decisions filters, each newest first by (decided_at, id); the primary key serves the
-- unfiltered list and --since/--until. Defined on the parent: every partition gets them.
create index decisions_by_tool on decisions (tool, decided_at, id);
create index decisions_by_user on decisions (user_sub, decided_at, id);
