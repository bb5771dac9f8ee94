-- People by name (docs/spec.md section 5.2): the display name a token or an ID token gives (`name`,
-- else `preferred_username`, else `email`) is kept beside the `sub` it labels, for the operator page,
-- the feed and webhooks. It is never used for a decision. Rows written before carry none (null).
alter table approvals add column requester_name name_text;
alter table operator_sessions add column name name_text;

-- The name is part of who asked: as immutable as the sub beside it (the guard of 0004, as 0017 left
-- it, with the new column).
drop trigger approvals_immutable on approvals;

create or replace function approvals_immutable() returns trigger language plpgsql as $$
begin
  if (new.id, new.hash, new.kind, new.tool, new.args, new.context, new.run_id, new.capability,
      new.presentation, new.requirements, new.result, new.reason, new.rule, new.requester_sub,
      new.requester_team, new.requester_agent, new.requester_name, new.policies, new.created_at)
     is distinct from
     (old.id, old.hash, old.kind, old.tool, old.args, old.context, old.run_id, old.capability,
      old.presentation, old.requirements, old.result, old.reason, old.rule, old.requester_sub,
      old.requester_team, old.requester_agent, old.requester_name, old.policies, old.created_at)
  then
    raise exception 'approvals: immutable column changed';
  end if;
  return new;
end
$$;

create trigger approvals_immutable
  before update of id, hash, kind, tool, args, context, run_id, capability, presentation, requirements,
                   result, reason, rule, requester_sub, requester_team, requester_agent, requester_name,
                   policies, created_at
  on approvals for each row execute function approvals_immutable();
