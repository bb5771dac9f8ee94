-- The decision store's JSON columns as json, not jsonb: a record is written once and read back
-- whole (replay, cases, GET /decisions), never searched inside, so the decomposed binary form
-- buys nothing, and making it was a large part of PostgreSQL's cost of a record (the batch insert
-- parsed every value into jsonb). json keeps the text the writer sent, after checking it is
-- JSON: PostgreSQL's CPU per record in a 500-row batch fell by about a quarter (59 to 43 µs on
-- the machine it was measured on).
alter table decisions
  drop constraint decisions_roles,
  drop constraint decisions_policies,
  alter column roles type json using roles::json,
  alter column policies type json using policies::json,
  alter column args type json using args::json,
  alter column claims type json using claims::json,
  alter column context type json using context::json,
  alter column run type json using run::json,
  add constraint decisions_roles check (json_typeof(roles) = 'array'),
  add constraint decisions_policies check (json_typeof(policies) = 'array');
