-- The guard of 0001 as two triggers that run only when they can have something to refuse.
--
-- approvals_guard ran a PL/pgSQL function on every update, comparing fourteen columns that no
-- transition writes. Now the immutable columns are guarded by a trigger that fires only when an
-- UPDATE names one of them, and the transition rule is the WHEN clause of a trigger on `status` and
-- the decision fields, whose function runs only to refuse. The rules are unchanged: an immutable
-- column may not change (naming it with its own value is allowed, as before), and status moves only
-- pending -> granted | denied | expired and granted -> consumed | expired.
--
-- New here: a decision, once written, is final. The decision fields (decided_by, decided_at,
-- decision_note) may be set only by the move out of pending, and consumed_at only once; before, an
-- UPDATE that kept the status could still rewrite them by hand.
--
-- A trigger on UPDATE OF some columns does not see a change that another BEFORE trigger makes to
-- them, so no other BEFORE UPDATE trigger on approvals may modify NEW (a test pins the triggers).

drop trigger approvals_guard on approvals;
drop function approvals_guard();

create function approvals_immutable() returns trigger language plpgsql as $$
begin
  if (new.id, new.hash, new.kind, new.tool, new.args, new.capability, new.presentation, new.reason,
      new.rule, new.requester_sub, new.requester_team, new.requester_agent, new.policies, new.created_at)
     is distinct from
     (old.id, old.hash, old.kind, old.tool, old.args, old.capability, old.presentation, old.reason,
      old.rule, old.requester_sub, old.requester_team, old.requester_agent, old.policies, old.created_at)
  then
    raise exception 'approvals: immutable column changed';
  end if;
  return new;
end
$$;

create trigger approvals_immutable
  before update of id, hash, kind, tool, args, capability, presentation, reason, rule, requester_sub,
                   requester_team, requester_agent, policies, created_at
  on approvals for each row execute function approvals_immutable();

-- The rules on moves and on decisions, in one WHEN clause (evaluated in the executor for each row the
-- UPDATE writes); the function runs only to refuse, and says which rule.
create function approvals_move_refused() returns trigger language plpgsql as $$
begin
  if new.status is distinct from old.status and not (
       (old.status = 'pending' and new.status in ('granted', 'denied', 'expired'))
    or (old.status = 'granted' and new.status in ('consumed', 'expired')))
  then
    raise exception 'approvals: illegal transition % -> %', old.status, new.status;
  end if;
  raise exception 'approvals: a decision is final (the row is %)', old.status;
end
$$;

create trigger approvals_transition
  before update of status, decided_by, decided_at, decision_note, consumed_at on approvals for each row
  when (
    -- an illegal move
    (old.status is distinct from new.status and not (
         (old.status = 'pending' and new.status in ('granted', 'denied', 'expired'))
      or (old.status = 'granted' and new.status in ('consumed', 'expired'))))
    -- or a decision rewritten
    or (old.status <> 'pending'
        and (new.decided_by, new.decided_at, new.decision_note) is distinct from
            (old.decided_by, old.decided_at, old.decision_note))
    or (old.consumed_at is not null and new.consumed_at is distinct from old.consumed_at))
  execute function approvals_move_refused();
