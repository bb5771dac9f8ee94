-- Who granted an approval (docs/spec.md section 5.4): one row per approver who granted it while it
-- was pending, so an approval whose requirements ask for a quorum counts distinct people, and the
-- approval shows who granted it so far.
--
-- Who may answer each requirement, and how many must grant it, is part of the requirement itself
-- (`approvals.requirements`: `approvers`, `quorum`, `separate_from_requester`, covered by the hash);
-- `requirements` here lists the requirements (their 0-based positions, in load order) the grant
-- counted toward. The store writes a grant under the approval row's lock (SELECT … FOR UPDATE), so
-- racing grants on any number of replicas are counted one after the other, and the approval moves
-- to granted exactly once (src/approvals/store.ts).

create table approval_grants (
  approval_id  uuid not null references approvals (id),
  approver     name_text not null,                   -- the granter's sub
  name         name_text,                            -- the granter's display name, when the identity carries one
  at           timestamptz not null default now(),
  note         note_text,
  requirements int[] not null,
  primary key (approval_id, approver),
  constraint approval_grants_requirements check (cardinality(requirements) between 1 and 10000)
);

-- A grant is written only while its approval is pending, never by its requester (the store checks
-- both first; these are the backstop), and never changed or removed afterwards.
create function approval_grants_checked() returns trigger language plpgsql as $$
declare
  a record;
begin
  select status, requester_sub into a from approvals where id = new.approval_id;
  if a.status is distinct from 'pending' then
    raise exception 'approval_grants: the approval is not pending';
  end if;
  if a.requester_sub = new.approver then
    raise exception 'approval_grants: nobody grants their own request';
  end if;
  return new;
end
$$;

create trigger approval_grants_checked before insert on approval_grants
  for each row execute function approval_grants_checked();

create function approval_grants_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'approval_grants is append-only';
end
$$;

create trigger approval_grants_no_update_delete before update or delete on approval_grants
  for each statement execute function approval_grants_append_only();
create trigger approval_grants_no_truncate before truncate on approval_grants
  for each statement execute function approval_grants_append_only();

-- The backstop of the quorum: a move to granted is refused while a requirement that says who may
-- answer it (approvers, quorum, separate_from_requester) has fewer grants than its quorum. A writer
-- that does not know of grants (a replica older than this migration, during an upgrade) therefore
-- fails, and never grants such an approval with one answer. It reads, never modifies, NEW.
create function approvals_quorum_unmet() returns trigger language plpgsql as $$
begin
  if exists (
    select 1
      from jsonb_array_elements(coalesce(new.requirements::text, '[{}]')::jsonb) with ordinality r(req, n)
     where (r.req ? 'approvers' or r.req ? 'quorum' or r.req ? 'separate_from_requester')
       and (select count(*) from approval_grants g where g.approval_id = new.id and (r.n - 1)::int = any(g.requirements))
           < coalesce((r.req->>'quorum')::int, 1))
  then
    raise exception 'approvals: granted before every requirement has its quorum';
  end if;
  return new;
end
$$;

create trigger approvals_quorum before update of status on approvals for each row
  when (old.status = 'pending' and new.status = 'granted')
  execute function approvals_quorum_unmet();

-- A grant short of the quorum is a webhook event of its own.
alter table webhook_outbox drop constraint webhook_outbox_type;
alter table webhook_outbox add constraint webhook_outbox_type check (type in (
  'approval.created', 'approval.granted', 'approval.partially_granted', 'approval.denied', 'approval.expired',
  'approval.cancelled', 'approval.consumed'));
