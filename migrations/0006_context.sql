-- The host's facts a request was decided under (`context`, docs/spec.md section 5.3): the approval
-- hash covers them, so a grant under one context is never redeemed under another, and the operator is
-- shown them. Null for a request without a context, and for every row written before this migration.

alter table approvals add column context json_object_text;

-- The immutable columns now include context.
drop trigger approvals_immutable on approvals;

create or replace function approvals_immutable() returns trigger language plpgsql as $$
begin
  if (new.id, new.hash, new.kind, new.tool, new.args, new.context, new.capability, new.presentation,
      new.requirements, new.reason, new.rule, new.requester_sub, new.requester_team, new.requester_agent,
      new.policies, new.created_at)
     is distinct from
     (old.id, old.hash, old.kind, old.tool, old.args, old.context, old.capability, old.presentation,
      old.requirements, old.reason, old.rule, old.requester_sub, old.requester_team, old.requester_agent,
      old.policies, old.created_at)
  then
    raise exception 'approvals: immutable column changed';
  end if;
  return new;
end
$$;

create trigger approvals_immutable
  before update of id, hash, kind, tool, args, context, capability, presentation, requirements, reason, rule,
                   requester_sub, requester_team, requester_agent, policies, created_at
  on approvals for each row execute function approvals_immutable();
