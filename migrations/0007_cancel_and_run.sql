-- A requester may withdraw its own approval (POST /approvals/{id}/cancel, docs/spec.md section 5.4):
-- status `cancelled`, from pending or granted, final. It leaves the live rows, so it no longer
-- holds the unique live request, the operators' queue or the caller's pending count. And the run a
-- request came from (`run.id`, run_id), shown to operators; immutable like the rest of the request.

alter domain approval_status drop constraint approval_status_valid;
alter domain approval_status add constraint approval_status_valid
  check (value in ('pending', 'granted', 'denied', 'expired', 'consumed', 'cancelled'));

alter table approvals add column run_id name_text;

-- The moves: as 0004, and pending | granted -> cancelled. A cancel writes no decision field.
create or replace function approvals_move_refused() returns trigger language plpgsql as $$
begin
  if new.status is distinct from old.status and not (
       (old.status = 'pending' and new.status in ('granted', 'denied', 'expired', 'cancelled'))
    or (old.status = 'granted' and new.status in ('consumed', 'expired', 'cancelled')))
  then
    raise exception 'approvals: illegal transition % -> %', old.status, new.status;
  end if;
  raise exception 'approvals: a decision is final (the row is %)', old.status;
end
$$;

drop trigger approvals_transition on approvals;
create trigger approvals_transition
  before update of status, decided_by, decided_at, decision_note, consumed_at on approvals for each row
  when (
    -- an illegal move
    (old.status is distinct from new.status and not (
         (old.status = 'pending' and new.status in ('granted', 'denied', 'expired', 'cancelled'))
      or (old.status = 'granted' and new.status in ('consumed', 'expired', 'cancelled'))))
    -- or a decision rewritten
    or (old.status <> 'pending'
        and (new.decided_by, new.decided_at, new.decision_note) is distinct from
            (old.decided_by, old.decided_at, old.decision_note))
    or (old.consumed_at is not null and new.consumed_at is distinct from old.consumed_at))
  execute function approvals_move_refused();

-- The immutable columns now include run_id.
drop trigger approvals_immutable on approvals;

create or replace function approvals_immutable() returns trigger language plpgsql as $$
begin
  if (new.id, new.hash, new.kind, new.tool, new.args, new.context, new.run_id, new.capability,
      new.presentation, new.requirements, new.reason, new.rule, new.requester_sub, new.requester_team,
      new.requester_agent, new.policies, new.created_at)
     is distinct from
     (old.id, old.hash, old.kind, old.tool, old.args, old.context, old.run_id, old.capability,
      old.presentation, old.requirements, old.reason, old.rule, old.requester_sub, old.requester_team,
      old.requester_agent, old.policies, old.created_at)
  then
    raise exception 'approvals: immutable column changed';
  end if;
  return new;
end
$$;

create trigger approvals_immutable
  before update of id, hash, kind, tool, args, context, run_id, capability, presentation, requirements,
                   reason, rule, requester_sub, requester_team, requester_agent, policies, created_at
  on approvals for each row execute function approvals_immutable();
