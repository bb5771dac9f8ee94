-- An approval carries every requirement that asked for it, and stores its arguments once.
--
-- requirements: the canonical JSON array of the files that asked, in load order, each
-- {kind, policy, reason, rule} with its capability and presentation, which are left out when they are
-- the default {tool, args}: the arguments are then stored once, in `args`, not three times. A row
-- written before this migration has no requirements (null): its one requirement is read from kind,
-- reason, rule, capability and presentation, as it always was. New rows leave capability and
-- presentation null; kind, reason and rule stay the first requirement's (lists and filters read them).
-- (No table CHECK ties the two forms together: every UPDATE would evaluate it, see 0002; the store
-- refuses to read a row that has neither.)
--
-- approvals_denied_request finds a recent denial of the same request by the same requester
-- (DENIED_COOLDOWN): a partial index over denied rows only, written once per denial.

create domain json_array_text as text
  constraint json_array_text_array check (left(value, 1) = '[' and octet_length(value) <= 16777216);

alter table approvals
  add column requirements json_array_text,
  alter column capability drop not null,
  alter column presentation drop not null;

create index approvals_denied_request on approvals (requester_sub, hash, decided_at desc) where status = 'denied';

-- The immutable columns now include requirements.
drop trigger approvals_immutable on approvals;

create or replace function approvals_immutable() returns trigger language plpgsql as $$
begin
  if (new.id, new.hash, new.kind, new.tool, new.args, new.capability, new.presentation, new.requirements,
      new.reason, new.rule, new.requester_sub, new.requester_team, new.requester_agent, new.policies,
      new.created_at)
     is distinct from
     (old.id, old.hash, old.kind, old.tool, old.args, old.capability, old.presentation, old.requirements,
      old.reason, old.rule, old.requester_sub, old.requester_team, old.requester_agent, old.policies,
      old.created_at)
  then
    raise exception 'approvals: immutable column changed';
  end if;
  return new;
end
$$;

create trigger approvals_immutable
  before update of id, hash, kind, tool, args, capability, presentation, requirements, reason, rule,
                   requester_sub, requester_team, requester_agent, policies, created_at
  on approvals for each row execute function approvals_immutable();
