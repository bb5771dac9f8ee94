// The approval store's grants (migrations/0019): counted per requirement, and the database's
// backstops, which hold whatever writes to it (an older replica during an upgrade included).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalHash } from '../../src/json/canonical.js';
import type { ApprovalRequirement } from '../../src/policy/model.js';
import { NotEligibleError } from '../../src/approvals/errors.js';
import { createApprovalStore, type ApprovalStore, type CreateApprovalInput } from '../../src/approvals/store.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { json } from './fixtures.js';

let db: TestDatabase;
let store: ApprovalStore;
beforeAll(async () => {
  db = await createTestDatabase();
  store = createApprovalStore(db.sql, { approvalTtlMs: 3_600_000, grantTtlMs: 600_000, deadlineMs: 10_000 });
});
afterAll(async () => db?.drop());

let seq = 0;
/** A request whose one requirement narrows who may answer it as `narrowing` says. */
function request(narrowing: Partial<ApprovalRequirement>, sub = `agent-${++seq}`): CreateApprovalInput {
  const tool = 'refund';
  const args = json(`{"order":"A${++seq}","amount":120.50}`);
  const requirement: ApprovalRequirement = {
    policy: 'payments',
    rule: 'two-of-finance',
    kind: 'refund_two',
    reason: 'two people of finance',
    capability: {},
    presentation: {},
    ...narrowing,
  };
  return {
    descriptor: {
      kind: requirement.kind,
      capability: {},
      presentation: {},
      requirements: [requirement],
      hash: approvalHash({ tool, args, requirements: [requirement] }),
    },
    tool,
    args,
    requester: { sub, team: 'support', agent: 'helpdesk', name: null },
    policies: [{ policy: 'payments', digest: `sha256:${'ab'.repeat(32)}` }],
  };
}

describe('grants', () => {
  it('a stored requirement keeps who may answer it, and still re-hashes to its hash', async () => {
    const input = request({ approvers: { roles: ['finance'] }, quorum: 2, separate_from_requester: 'team' });
    const { approval } = await store.create(input);
    const again = await store.get(approval.id);
    expect(again!.requirements[0]).toMatchObject({
      approvers: { roles: ['finance'] },
      quorum: 2,
      separate_from_requester: 'team',
    });
    const { tool, args, requirements } = again!;
    expect(approvalHash({ tool, args, requirements })).toBe(again!.hash);
  });

  it('counts a grant per requirement; not eligible throws NotEligibleError naming the rule and why', async () => {
    const { approval } = await store.create(request({ approvers: { users: ['u1', 'u2'] }, quorum: 2 }));
    await expect(store.grant(approval.id, { sub: 'u3' }, null)).rejects.toBeInstanceOf(NotEligibleError);
    await expect(store.grant(approval.id, { sub: 'u3' }, null)).rejects.toMatchObject({
      requirements: [{ rule: 'two-of-finance', policy: 'payments', why: ['user'] }],
    });
    const first = await store.grant(approval.id, { sub: 'u1', name: 'User One' }, 'fine');
    expect(first).toMatchObject({ ok: true, approval: { status: 'pending' } });
    if (!first.ok) throw new Error('unreachable');
    expect(first.approval.grants).toEqual([
      { by: 'u1', name: 'User One', at: expect.any(String), note: 'fine', requirements: [0] },
    ]);
    expect(await store.grant(approval.id, { sub: 'u1' }, null)).toMatchObject({ ok: true, changed: false });
    const second = await store.grant(approval.id, { sub: 'u2' }, null);
    expect(second).toMatchObject({ ok: true, approval: { status: 'granted', decided_by: 'u2' } });
  });

  it('refuses, in the database, a move to granted short of the quorum (an older writer knows no grants)', async () => {
    const { approval } = await store.create(request({ quorum: 2 }));
    await store.grant(approval.id, { sub: 'op-1' }, null);
    await expect(
      db.sql`update approvals set status = 'granted', decided_by = 'op-2', decided_at = now() where id = ${approval.id}`,
    ).rejects.toThrow(/quorum/);
    // A narrowed requirement with a quorum of 1 needs its one grant too.
    const narrowed = (await store.create(request({ approvers: { teams: ['risk'] } }))).approval;
    await expect(
      db.sql`update approvals set status = 'granted', decided_by = 'op-2', decided_at = now() where id = ${narrowed.id}`,
    ).rejects.toThrow(/quorum/);
    // A requirement that narrows nothing moves as it always did.
    const plain = (await store.create(request({}))).approval;
    await db.sql`update approvals set status = 'granted', decided_by = 'op-2', decided_at = now() where id = ${plain.id}`;
    expect((await store.get(plain.id))!.status).toBe('granted');
  });

  it('refuses, in the database, a grant of an approval not pending or by its requester, and any change to a grant', async () => {
    const { approval } = await store.create(request({ quorum: 2 }, 'agent-self'));
    const insert = (by: string) =>
      db.sql`insert into approval_grants (approval_id, approver, requirements) values (${approval.id}, ${by}, '{0}')`;
    await expect(insert('agent-self')).rejects.toThrow(/own request/);
    await insert('op-1');
    await expect(db.sql`update approval_grants set note = 'x'`).rejects.toThrow(/append-only/);
    await expect(db.sql`delete from approval_grants`).rejects.toThrow(/append-only/);
    await store.deny(approval.id, { sub: 'op-2' }, 'no');
    await expect(insert('op-3')).rejects.toThrow(/not pending/);
  });
});
