-- The checks on single values move from table CHECK constraints to domains, one per kind of value.
--
-- Why: PostgreSQL evaluates EVERY check constraint of a table on every INSERT and every UPDATE, and
-- prepares each one anew for each statement. A transition writes three or four columns of approvals,
-- yet paid for the fifteen checks of columns it never touches (about 40 % of a grant's time in the
-- database). A domain's check runs only where a value is converted to it, that is where its column is
-- written: on insert for the
-- columns set once (the guard trigger of 0001 keeps them from ever changing), on update for the
-- columns the transition sets. The rules themselves are unchanged.
--
-- How: the domains are created without their checks, the columns change type (a domain over the
-- same base type: no rewrite of the table; the plain indexes are kept, the partial ones that read
-- `status` are rebuilt), and then each check is added to its domain, which verifies the existing rows
-- once. The tables stay locked for all of it (about 4-6 s per 200,000 approvals on a small machine).
-- A change of type discards the columns' statistics: ANALYZE at the end gathers them again.

create domain name_text as text;             -- sub, team, agent, tool, kind, rule, approver
create domain note_text as text;             -- the policy's reason, a grant note, a deny reason
create domain sha256_text as text;           -- an approval hash
create domain json_object_text as text;      -- the canonical JSON text of an object
create domain policy_list as jsonb;          -- the policies that decided, with versions and digests
create domain approval_status as text;

alter table approvals
  drop constraint approvals_status_valid,
  drop constraint approvals_hash_format,
  drop constraint approvals_kind_length,
  drop constraint approvals_tool_length,
  drop constraint approvals_reason_length,
  drop constraint approvals_rule_length,
  drop constraint approvals_requester_sub_length,
  drop constraint approvals_requester_team_length,
  drop constraint approvals_requester_agent_length,
  drop constraint approvals_decided_by_length,
  drop constraint approvals_decision_note_length,
  drop constraint approvals_args_object,
  drop constraint approvals_capability_object,
  drop constraint approvals_presentation_object,
  drop constraint approvals_policies_array,
  alter column status type approval_status,
  alter column hash type sha256_text,
  alter column kind type name_text,
  alter column tool type name_text,
  alter column args type json_object_text,
  alter column capability type json_object_text,
  alter column presentation type json_object_text,
  alter column reason type note_text,
  alter column rule type name_text,
  alter column requester_sub type name_text,
  alter column requester_team type name_text,
  alter column requester_agent type name_text,
  alter column policies type policy_list,
  alter column decided_by type name_text,
  alter column decision_note type note_text;

alter table approval_events
  drop constraint approval_events_actor_length,
  drop constraint approval_events_from_status_valid,
  drop constraint approval_events_to_status_valid,
  drop constraint approval_events_note_length,
  alter column actor type name_text,
  alter column from_status type approval_status,
  alter column to_status type approval_status,
  alter column note type note_text;

-- The guard of 0001, the same text: replacing it makes every open session compile it again for the
-- new column types (a session's compiled copy would otherwise fail on its next update).
create or replace function approvals_guard() returns trigger language plpgsql as $$
begin
  if (new.id, new.hash, new.kind, new.tool, new.args, new.capability, new.presentation, new.reason,
      new.rule, new.requester_sub, new.requester_team, new.requester_agent, new.policies, new.created_at)
     is distinct from
     (old.id, old.hash, old.kind, old.tool, old.args, old.capability, old.presentation, old.reason,
      old.rule, old.requester_sub, old.requester_team, old.requester_agent, old.policies, old.created_at)
  then
    raise exception 'approvals: immutable column changed';
  end if;
  if new.status is distinct from old.status and not (
       (old.status = 'pending' and new.status in ('granted', 'denied', 'expired'))
    or (old.status = 'granted' and new.status in ('consumed', 'expired')))
  then
    raise exception 'approvals: illegal transition % -> %', old.status, new.status;
  end if;
  return new;
end
$$;

-- The same rules as 0001's constraints. (A null passes a domain's check, as it passed those.)
alter domain name_text add constraint name_text_length check (char_length(value) between 1 and 512);
alter domain note_text add constraint note_text_length check (char_length(value) <= 2000);
alter domain sha256_text add constraint sha256_text_format check (value ~ '^sha256:[0-9a-f]{64}$');
-- Canonical texts of JSON objects; a sanity bound well above any request body limit.
alter domain json_object_text add constraint json_object_text_object
  check (left(value, 1) = '{' and octet_length(value) <= 16777216);
alter domain policy_list add constraint policy_list_array check (jsonb_typeof(value) = 'array');
alter domain approval_status add constraint approval_status_valid
  check (value in ('pending', 'granted', 'denied', 'expired', 'consumed'));

-- Gather the statistics the type change discarded, where there are rows to gather them from: on
-- empty tables ANALYZE would record "empty", and plans chosen on that (a sequential scan is the
-- cheapest way through nothing) would be kept as the tables grow, until autovacuum analyzed them.
do $$
begin
  if exists (select from approvals) then
    analyze approvals, approval_events;
  end if;
end
$$;
