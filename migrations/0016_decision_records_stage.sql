-- POST /inspect's records in the decision store (docs/spec.md section 5.11): `stage` says what was
-- inspected, a tool's result or a model's request or response. Null is a /decide call's record (the
-- `args` stage), so the rows before this file, and every /decide row after it, need no value. The
-- value inspected is never stored.
alter table decisions
  add column stage text,
  add constraint decisions_stage check (stage in ('result', 'llm_request', 'llm_response'));

-- GET /decisions?stage=…: only /inspect's rows are indexed, so /decide's inserts pay nothing for it.
create index decisions_by_stage on decisions (stage, decided_at, id) where stage is not null;
