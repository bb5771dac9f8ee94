-- A tool's result held for a person's review (POST /inspect, docs/spec.md sections 5.4 and 5.11):
-- the approval hash covers the result's canonical form beside the call, and the operator is shown
-- it, labelled as a tool's output. Any JSON (a string, a number, null…), stored as its canonical
-- text; null for an approval of a call (every row before this file).

create domain json_text as text
  constraint json_text_bounded check (octet_length(value) between 1 and 16777216);

alter table approvals add column result json_text;

-- The immutable columns now include result.
drop trigger approvals_immutable on approvals;

create or replace function approvals_immutable() returns trigger language plpgsql as $$
begin
  if (new.id, new.hash, new.kind, new.tool, new.args, new.context, new.run_id, new.capability,
      new.presentation, new.requirements, new.result, new.reason, new.rule, new.requester_sub,
      new.requester_team, new.requester_agent, new.policies, new.created_at)
     is distinct from
     (old.id, old.hash, old.kind, old.tool, old.args, old.context, old.run_id, old.capability,
      old.presentation, old.requirements, old.result, old.reason, old.rule, old.requester_sub,
      old.requester_team, old.requester_agent, old.policies, old.created_at)
  then
    raise exception 'approvals: immutable column changed';
  end if;
  return new;
end
$$;

create trigger approvals_immutable
  before update of id, hash, kind, tool, args, context, run_id, capability, presentation, requirements,
                   result, reason, rule, requester_sub, requester_team, requester_agent, policies, created_at
  on approvals for each row execute function approvals_immutable();
