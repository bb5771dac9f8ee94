-- Idempotency-Key rows keep what the answer was about, not the answer's text (docs/spec.md
-- section 5.3): a kept answer is sent again only after the request is decided again for the caller
-- and found still to allow it, and it is rebuilt from the decision made then and from the approval
-- it names. `identity_hash` binds a row to the identity it answered (the SHA-256 of the token's
-- claims that Gatehouse reads): another identity of the same `sub` is never sent it. `kind` says what
-- the row refers to: `allow` (a counted call allowed, `decision_id`), `redeem` (a grant consumed,
-- `approval_id` and `decision_id`), `filed` (an approval filed, `approval_id`), `body` (an answer
-- that cannot be rebuilt, kept as its text in `response`: POST /usage).
--
-- The rows written before this migration carry no identity, so none of them may be sent again: they
-- are deleted. A retry of such a request acts afresh, which never allows more than it did: a redeem
-- finds its grant consumed; a counted call or a usage report counts again (a counter only fills
-- sooner); a filing finds its live approval.
delete from idempotency_keys;

alter table idempotency_keys
  add column identity_hash sha256_text not null,
  add column kind text not null,
  add column approval_id uuid,
  add column decision_id uuid,
  alter column response drop not null,
  add constraint idempotency_keys_kind check (
    case kind
      when 'allow' then decision_id is not null and approval_id is null and response is null
      when 'redeem' then decision_id is not null and approval_id is not null and response is null
      when 'filed' then approval_id is not null and decision_id is null and response is null
      when 'body' then response is not null and approval_id is null and decision_id is null
      else false
    end
  );
