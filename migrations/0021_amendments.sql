-- Amend and grant (docs/spec.md section 5.4): an approver grants a changed call. The amended call is
-- decided again under the serving policy; the approval keeps what was filed (`args`, `hash`,
-- `requirements` stay immutable) and records the amendment beside it: the amended arguments, the
-- hash a redeem must now match, the requirements the amended call asks for (null when the policy
-- allows it outright: the filed requirements then still say who must grant), who amended and when.
--
-- An amendment restarts the count: grants made before it were for another call. `grant_round`
-- numbers the amendments of an approval (0: none), and each grant records the round it was made in;
-- only the current round's grants count toward the quorum, so one person may grant once per round.
alter table approvals
  add column amended_args json_object_text,
  add column amended_hash sha256_text,
  add column amended_requirements json_array_text,
  add column amended_by name_text,
  add column amended_at timestamptz,
  add column grant_round int not null default 0,
  add constraint approvals_amended check (
    (amended_args is null) = (amended_hash is null)
    and (amended_args is null) = (amended_by is null)
    and (amended_args is null) = (amended_at is null)
    and (amended_requirements is null or amended_args is not null)
    and (grant_round = 0) = (amended_args is null)
    and grant_round >= 0);

alter table approval_grants add column round int not null default 0;
alter table approval_grants drop constraint approval_grants_pkey;
alter table approval_grants add primary key (approval_id, round, approver);

-- An amendment is made while the approval is pending, never by its requester, and is final once
-- the approval leaves pending. Reads, never modifies, NEW (as every trigger on approvals).
create function approvals_amendment_checked() returns trigger language plpgsql as $$
begin
  if old.status <> 'pending' then
    raise exception 'approvals: an amendment is made only while pending';
  end if;
  if new.amended_by = new.requester_sub then
    raise exception 'approvals: nobody amends their own request';
  end if;
  if new.grant_round <> old.grant_round + 1 then
    raise exception 'approvals: an amendment starts the next round of grants';
  end if;
  return new;
end
$$;

create trigger approvals_amendment before update of amended_args, amended_hash, amended_requirements, amended_by,
                                                    amended_at, grant_round
  on approvals for each row execute function approvals_amendment_checked();

-- The quorum's backstop (0019), now over the requirements the current call asks for and the grants
-- of the current round.
create or replace function approvals_quorum_unmet() returns trigger language plpgsql as $$
begin
  if exists (
    select 1
      from jsonb_array_elements(coalesce(new.amended_requirements, new.requirements, '[{}]')::jsonb) with ordinality r(req, n)
     where (r.req ? 'approvers' or r.req ? 'quorum' or r.req ? 'separate_from_requester')
       and (select count(*) from approval_grants g
             where g.approval_id = new.id and g.round = new.grant_round and (r.n - 1)::int = any(g.requirements))
           < coalesce((r.req->>'quorum')::int, 1))
  then
    raise exception 'approvals: granted before every requirement has its quorum';
  end if;
  return new;
end
$$;
