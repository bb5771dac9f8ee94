-- Two kinds of text from the operator (docs/spec.md section 5.4): a decision's `decision_note` is
-- for the record, read by operators only; `decision_message` is the optional text for the agent, the
-- one thing of the decision the model is shown when the requester cites a denied approval. Before
-- this migration a denial's one text, its `reason`, was both; those rows keep meaning what they
-- meant when they were written: their note is copied to the message.
--
-- Like the other decision fields, the message is written only by the move out of pending (a denial:
-- a grant carries no message) and is final afterwards; each event row of a denial records the
-- message it wrote (events from before keep their one text in `note`: the log is append-only).

alter table approvals add column decision_message note_text;
alter table approval_events add column message note_text;

-- Before the trigger below knows the column: an UPDATE that names only it fires neither trigger.
update approvals set decision_message = decision_note where status = 'denied' and decision_note is not null;

alter table approvals
  drop constraint approvals_pending_undecided,
  add constraint approvals_pending_undecided check (
    status <> 'pending'
    or (decided_by is null and decided_at is null and decision_note is null and decision_message is null
        and consumed_at is null)),
  add constraint approvals_message_on_denial check (decision_message is null or status = 'denied');

-- The rules of 0007, with the message among the decision fields that are final once written.
drop trigger approvals_transition on approvals;
create trigger approvals_transition
  before update of status, decided_by, decided_at, decision_note, decision_message, consumed_at on approvals for each row
  when (
    -- an illegal move
    (old.status is distinct from new.status and not (
         (old.status = 'pending' and new.status in ('granted', 'denied', 'expired', 'cancelled'))
      or (old.status = 'granted' and new.status in ('consumed', 'expired', 'cancelled'))))
    -- or a decision rewritten
    or (old.status <> 'pending'
        and (new.decided_by, new.decided_at, new.decision_note, new.decision_message) is distinct from
            (old.decided_by, old.decided_at, old.decision_note, old.decision_message))
    or (old.consumed_at is not null and new.consumed_at is distinct from old.consumed_at))
  execute function approvals_move_refused();
