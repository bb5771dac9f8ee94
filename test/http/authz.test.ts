// Authorization (docs/spec.md section 5).
// Identity comes only from the verified token; the approver role is matched exactly; nobody decides
// their own approval, sees or redeems someone else's, or sets a server-owned field. Each refusal is
// checked in the database too: nothing stored, nothing moved, no event row written.
import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { approverToken, bearer, createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { expectProblemJson, expectPrototypeClean } from '../helpers/http.js';

interface ApprovalBody {
  id: string;
  status: string;
  hash: string;
  requester: { sub: string; team: string | null; agent: string | null };
  decided_by: string | null;
  expires_at: string;
  capability: Record<string, unknown>;
  presentation: Record<string, unknown>;
  kind: string;
}

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: 'prod', database: true });
});
afterAll(async () => t?.close());
afterEach(() => expectPrototypeClean());

let seq = 0;
const newSub = (label = 'agent'): string => `${label}-${++seq}-${randomUUID().slice(0, 8)}`;
const agent = (sub: string, extra: Record<string, unknown> = {}): string =>
  token({ sub, team: 'support', agent: 'bot', ...extra });
const bigRefund = () => ({ tool: 'refund', args: { order: `O-${++seq}`, amount: 150, note: 'twice' } });
const get = (url: string, tok: string) => t.app.inject({ method: 'GET', url, headers: bearer(tok) });
const grant = (id: string, tok: string, body: unknown = { note: 'ok' }) =>
  post(t.app, `/approvals/${id}/grant`, body, tok);
const deny = (id: string, tok: string, body: unknown = { reason: 'no' }) =>
  post(t.app, `/approvals/${id}/deny`, body, tok);

async function create(
  sub: string,
  body = bigRefund(),
): Promise<{ approval: ApprovalBody; body: ReturnType<typeof bigRefund> }> {
  const res = await post(t.app, '/approvals', body, agent(sub));
  expect(res.statusCode, res.body).toBe(201);
  return { approval: res.json() as ApprovalBody, body };
}

/** Database truth, read directly: not through the API under test. */
async function row(id: string): Promise<{ status: string; decided_by: string | null; events: number }> {
  const [r] = await t.db!.sql<
    { status: string; decided_by: string | null }[]
  >`select status, decided_by from approvals where id = ${id}`;
  const [e] = await t.db!.sql<
    { n: number }[]
  >`select count(*)::int as n from approval_events where approval_id = ${id}`;
  return { status: r!.status, decided_by: r!.decided_by, events: e!.n };
}
async function totals(): Promise<{ approvals: number; events: number }> {
  const [r] = await t.db!.sql<{ a: number; e: number }[]>`
    select (select count(*)::int from approvals) as a, (select count(*)::int from approval_events) as e`;
  return { approvals: r!.a, events: r!.e };
}
/** Unchanged since creation: pending, undecided, only the creation event. */
async function expectUntouched(id: string): Promise<void> {
  expect(await row(id)).toEqual({ status: 'pending', decided_by: null, events: 1 });
}

const IDENTITY_FIELDS = ['user', 'sub', 'team', 'agent', 'roles', 'identity', 'claims'] as const;
const identityValue = (field: string): unknown =>
  field === 'roles'
    ? ['approver', 'admin']
    : field === 'identity' || field === 'claims'
      ? { sub: 'root', roles: ['approver'] }
      : 'root';

describe('identity fields in a body are refused on EVERY body route', () => {
  let pendingId: string;
  beforeAll(async () => {
    pendingId = (await create(newSub())).approval.id;
  });
  const routes: [string, () => string, (field: string) => Record<string, unknown>, () => string][] = [
    [
      '/decide',
      () => '/decide',
      (f) => ({ tool: 'lookup_order', args: {}, [f]: identityValue(f) }),
      () => agent(newSub()),
    ],
    [
      '/explain (as a policy reader)',
      () => '/explain',
      (f) => ({ tool: 'lookup_order', args: {}, [f]: identityValue(f) }),
      () => agent(newSub(), { roles: ['approver'] }),
    ],
    ['/approvals', () => '/approvals', (f) => ({ ...bigRefund(), [f]: identityValue(f) }), () => agent(newSub())],
    [
      'grant (as an approver)',
      () => `/approvals/${pendingId}/grant`,
      (f) => ({ note: 'ok', [f]: identityValue(f) }),
      () => approverToken('op-id'),
    ],
    [
      'grant (as an approver)',
      () => `/approvals/${pendingId}/grant`,
      (f) => ({ [f]: identityValue(f) }),
      () => approverToken('op-id-g'),
    ],
    [
      'deny (as an approver)',
      () => `/approvals/${pendingId}/deny`,
      (f) => ({ reason: 'no', [f]: identityValue(f) }),
      () => approverToken('op-id'),
    ],
  ];
  for (const [name, url, body, tok] of routes) {
    for (const field of IDENTITY_FIELDS) {
      it(`${name}: "${field}" → 422 identity_in_body, nothing stored or moved`, async () => {
        const before = await totals();
        const res = await post(t.app, url(), body(field), tok());
        const problem = expectProblemJson(res, 422, 'identity_in_body');
        expect(problem.errors).toContainEqual({ pointer: `/${field}`, message: 'unknown field' });
        expect(await totals()).toEqual(before);
      });
    }
  }
  it('grant as an agent with identity fields: refused before its body is read (403), nothing moved', async () => {
    for (const field of IDENTITY_FIELDS) {
      expectProblemJson(
        await post(t.app, `/approvals/${pendingId}/grant`, { [field]: identityValue(field) }, agent(newSub())),
        403,
      );
    }
  });
  it('the grant target stayed pending with only its creation event', async () => {
    await expectUntouched(pendingId);
  });
  it('near-miss spellings ("Team", "USER", "roles " …) are refused too (422), never stripped', async () => {
    for (const f of ['Team', 'USER', 'roles ', ' sub', 'teams', 'role', 'approver']) {
      expectProblemJson(await post(t.app, '/decide', { tool: 'lookup_order', [f]: 'x' }, agent(newSub())), 422);
      expectProblemJson(await grant(pendingId, approverToken('op-near'), { [f]: 'x' }), 422);
    }
    await expectUntouched(pendingId);
  });
  it('identity smuggled through __proto__ in a body is an unknown field (422), never the caller', async () => {
    const raw = (url: string, payload: string, tok: string) =>
      t.app.inject({ method: 'POST', url, headers: { ...bearer(tok), 'content-type': 'application/json' }, payload });
    expectProblemJson(
      await raw(
        '/decide',
        '{"tool":"refund","args":{"order":"A1","amount":40},"__proto__":{"team":"support"}}',
        token({ sub: newSub(), team: 'sales' }),
      ),
      422,
    );
    // An agent never gets as far as the body (403); an approver's smuggled fields are unknown fields.
    expectProblemJson(
      await raw(`/approvals/${pendingId}/grant`, '{"__proto__":{"roles":["approver"]}}', agent(newSub())),
      403,
    );
    expectProblemJson(
      await raw(`/approvals/${pendingId}/grant`, '{"__proto__":{"roles":["approver"]}}', approverToken('op-proto')),
      422,
    );
    expectProblemJson(
      await raw(
        `/approvals/${pendingId}/grant`,
        '{"constructor":{"prototype":{"roles":["approver"]}}}',
        approverToken('op-proto'),
      ),
      422,
    );
    await expectUntouched(pendingId);
  });
  it('args.team is data: a sales token with args.team "support" is still not the support team', async () => {
    // refund-support selects team support; the payments refund schema refuses extra args, so use /explain's rule.
    const res = await post(
      t.app,
      '/decide',
      { tool: 'refund', args: { order: 'A1', amount: 40 } },
      token({ sub: newSub(), team: 'sales' }),
    );
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ decision: 'deny', rule: 'payments#default' });
  });
});

describe('the approver role is matched exactly', () => {
  let id: string;
  beforeAll(async () => {
    id = (await create(newSub())).approval.id;
  });
  const attempts: [string, Record<string, unknown>, number][] = [
    ['roles "approver" as a string', { roles: 'approver' }, 401],
    ['roles [["approver"]] (nested)', { roles: [['approver']] }, 401],
    ['roles {"0":"approver","length":1}', { roles: { 0: 'approver', length: 1 } }, 401],
    ['roles ["Approver"]', { roles: ['Approver'] }, 403],
    ['roles ["approver "]', { roles: ['approver '] }, 403],
    ['roles [" approver"]', { roles: [' approver'] }, 403],
    ['roles ["approvers"]', { roles: ['approvers'] }, 403],
    ['roles ["approve"]', { roles: ['approve'] }, 403],
    ['roles ["approver\\u0000"] (a control character: refused at authentication)', { roles: ['approver\u0000'] }, 401],
    ['roles ["аpprover"] (Cyrillic а)', { roles: ['\u0430pprover'] }, 403],
    ['roles ["approver,admin"]', { roles: ['approver,admin'] }, 403],
    ['roles ["admin"]', { roles: ['admin'] }, 403],
    ['roles [] with role: "approver"', { roles: [], role: 'approver' }, 403],
    ['roles missing, scope "approver"', { roles: undefined, scope: 'approver' }, 403],
    ['roles in realm_access (another claim)', { roles: undefined, realm_access: { roles: ['approver'] } }, 403],
  ];
  for (const [name, claims, status] of attempts) {
    it(`${name}: grant and deny → ${status}, state untouched`, async () => {
      const tok = token({ sub: `op-${name.length}`, team: 'ops', ...claims });
      expectProblemJson(await grant(id, tok), status);
      expectProblemJson(await deny(id, tok), status);
      await expectUntouched(id);
    });
  }
  it('the role only in the body: 403 for an agent (its body is never read), 422 on /approvals; state untouched', async () => {
    expectProblemJson(await grant(id, agent(newSub()), { note: 'x', roles: ['approver'] }), 403);
    expectProblemJson(await deny(id, agent(newSub()), { reason: 'x', roles: ['approver'] }), 403);
    expectProblemJson(await post(t.app, '/approvals', { ...bigRefund(), roles: ['approver'] }, agent(newSub())), 422);
    await expectUntouched(id);
  });
  it('control: ["approver"] exactly, among other roles, may grant', async () => {
    const other = (await create(newSub())).approval.id;
    const res = await grant(other, token({ sub: 'op-exact', team: 'ops', roles: ['viewer', 'approver'] }));
    expect(res.statusCode).toBe(200);
    expect(await row(other)).toEqual({ status: 'granted', decided_by: 'op-exact', events: 2 });
  });
});

describe('self-approval', () => {
  it("an approver token with the requester's sub (any team or agent) → 403, no event row", async () => {
    const sub = newSub('dual');
    const { approval } = await create(sub);
    for (const tok of [
      token({ sub, roles: ['approver'] }),
      token({ sub, team: 'ops', agent: 'console', roles: ['approver', 'admin'] }),
      token({ sub, team: undefined, agent: undefined, roles: ['approver'] }),
    ]) {
      expectProblemJson(await grant(approval.id, tok), 403);
      expectProblemJson(await deny(approval.id, tok), 403);
    }
    await expectUntouched(approval.id);
  });
  it('10 concurrent self-grants → all 403, state pending, no event row', async () => {
    const sub = newSub('dual');
    const { approval } = await create(sub);
    const self = token({ sub, roles: ['approver'] });
    const results = await Promise.all(Array.from({ length: 10 }, () => grant(approval.id, self)));
    for (const r of results) expectProblemJson(r, 403, 'forbidden');
    await expectUntouched(approval.id);
  });
  it('10 concurrent self-grants racing 1 real approver: exactly the real approver wins, self never 200', async () => {
    const sub = newSub('dual');
    const { approval } = await create(sub);
    const self = token({ sub, roles: ['approver'] });
    const calls = Array.from({ length: 11 }, (_, i) =>
      i === 5 ? grant(approval.id, approverToken('op-real')) : grant(approval.id, self),
    );
    const results = await Promise.all(calls);
    expect(results[5]!.statusCode).toBe(200);
    results.forEach((r, i) => {
      if (i !== 5) expectProblemJson(r, 403, 'forbidden');
    });
    expect(await row(approval.id)).toEqual({ status: 'granted', decided_by: 'op-real', events: 2 });
    const events = await t.db!.sql<
      { actor: string }[]
    >`select actor from approval_events where approval_id = ${approval.id} order by id`;
    expect(events.map((e) => e.actor)).toEqual([sub, 'op-real']);
  });
  it('a self-grant after a real grant is still 403 (not 409): no state disclosure, no move', async () => {
    const sub = newSub('dual');
    const { approval } = await create(sub);
    expect((await grant(approval.id, approverToken('op-first'))).statusCode).toBe(200);
    expectProblemJson(await deny(approval.id, token({ sub, roles: ['approver'] })), 403);
    expect(await row(approval.id)).toEqual({ status: 'granted', decided_by: 'op-first', events: 2 });
  });
});

describe("other callers' approvals", () => {
  let owner: string;
  let other: string;
  let id: string;
  beforeAll(async () => {
    owner = newSub('owner');
    other = newSub('other');
    id = (await create(owner)).approval.id;
    for (let i = 0; i < 3; i++) await create(owner);
    for (let i = 0; i < 3; i++) await create(other);
  });

  it('GET by id: another agent → 404 with the same body as an id that does not exist', async () => {
    const theirs = await get(`/approvals/${id}`, agent(other));
    const missing = await get(`/approvals/${randomUUID()}`, agent(other));
    const a = expectProblemJson(theirs, 404, 'not_found');
    const b = expectProblemJson(missing, 404, 'not_found');
    expect(a).toEqual(b);
    expect(theirs.body).not.toContain(id);
  });
  it('grant and deny by a non-approver → 403 whether or not the id exists (pinned: existence is not revealed)', async () => {
    const pairs: [LightMyRequestResponse, LightMyRequestResponse][] = [
      [await grant(id, agent(other)), await grant(randomUUID(), agent(other))],
      [await deny(id, agent(other)), await deny(randomUUID(), agent(other))],
      [await grant(id, agent(other)), await grant('not-a-uuid', agent(other))],
    ];
    for (const [existing, absent] of pairs) {
      expect(expectProblemJson(existing, 403, 'forbidden')).toEqual(expectProblemJson(absent, 403, 'forbidden'));
    }
    await expectUntouched(id);
  });
  it("absent from the other caller's list, whatever the filters", async () => {
    for (const q of ['', '?status=pending', '?tool=refund', '?status=pending&tool=refund&limit=200', '?limit=1']) {
      const res = await get(`/approvals${q}`, agent(other));
      expect(res.statusCode, res.body).toBe(200);
      const items = (res.json() as { items: ApprovalBody[] }).items;
      expect(
        items.every((a) => a.requester.sub === other),
        q,
      ).toBe(true);
      expect(items.map((a) => a.id)).not.toContain(id);
    }
  });
  it("a cursor from another caller's (or an approver's) listing reveals none of their rows", async () => {
    const cursors: string[] = [];
    for (const tok of [agent(owner), approverToken('op-lister')]) {
      const page = (await get('/approvals?limit=1', tok)).json() as { next_cursor: string | null };
      expect(page.next_cursor).not.toBeNull();
      cursors.push(page.next_cursor!);
    }
    // A cursor far in the future, built the way the service builds them: still only one's own rows.
    cursors.push(Buffer.from(`2999-01-01T00:00:00.000000Z ffffffff-ffff-7fff-bfff-ffffffffffff`).toString('base64url'));
    for (const cursor of cursors) {
      const res = await get(`/approvals?limit=200&cursor=${encodeURIComponent(cursor)}`, agent(other));
      expect(res.statusCode, res.body).toBe(200);
      const items = (res.json() as { items: ApprovalBody[] }).items;
      expect(items.every((a) => a.requester.sub === other)).toBe(true);
      expect(items.map((a) => a.id)).not.toContain(id);
    }
    // The far-future cursor pages through everything before it: exactly the caller's own three.
    const all = (await get(`/approvals?limit=200&cursor=${encodeURIComponent(cursors[2]!)}`, agent(other))).json() as {
      items: ApprovalBody[];
    };
    expect(all.items).toHaveLength(3);
  });
  it("an approver (another sub) cannot redeem the owner's granted approval by id: require_approval, untouched", async () => {
    const { approval, body } = await create(owner);
    expect((await grant(approval.id, approverToken('op-g'))).statusCode).toBe(200);
    for (const tok of [
      approverToken('op-thief'),
      token({ sub: 'op-thief', team: 'support', roles: ['approver', 'admin'] }),
    ]) {
      const res = await post(t.app, '/decide', { ...body, approval_id: approval.id }, tok);
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ decision: expect.not.stringMatching(/^allow$/) });
      expect(res.body).not.toContain(approval.id);
    }
    expect(await row(approval.id)).toMatchObject({ status: 'granted', events: 2 });
  });
  it('a consumed approval cannot be redeemed by a different sub with the same request: require_approval, not allow', async () => {
    const { approval, body } = await create(owner);
    expect((await grant(approval.id, approverToken('op-c'))).statusCode).toBe(200);
    const redeemed = await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(owner));
    expect(redeemed.statusCode).toBe(200);
    expect(redeemed.json()).toMatchObject({ decision: 'allow', approval: { id: approval.id, status: 'consumed' } });
    // Same request, same team and agent, another sub.
    const res = await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(other));
    expect(res.statusCode).toBe(403);
    const d = res.json() as { decision: string; approval?: Record<string, unknown> };
    expect(d.decision).toBe('require_approval');
    expect(d.approval).not.toHaveProperty('id');
    expect(d.approval).not.toHaveProperty('status');
    // And 10 concurrent attempts by others: none allowed, still exactly three events.
    const tries = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(`${other}-${i}`)),
      ),
    );
    for (const r of tries) {
      expect(r.statusCode).toBe(403);
      expect(r.json()).toMatchObject({ decision: 'require_approval' });
    }
    expect(await row(approval.id)).toMatchObject({ status: 'consumed', events: 3 });
  });
});

describe('mass assignment: server-owned fields in a body', () => {
  const FIELDS: Record<string, unknown> = {
    status: 'granted',
    decided_by: 'op-forged',
    hash: `sha256:${'0'.repeat(64)}`,
    expires_at: '2099-01-01T00:00:00Z',
    requester: { sub: 'someone-else', team: 'ops', agent: null },
    capability: { order: 'Z9', amount: 1 },
    presentation: { order: 'Z9', amount: 1, note: 'harmless' },
    kind: 'refund_over_cap',
  };
  for (const [field, value] of Object.entries(FIELDS)) {
    it(`create with "${field}" → 422, nothing stored`, async () => {
      const sub = newSub();
      const before = await totals();
      const problem = expectProblemJson(
        await post(t.app, '/approvals', { ...bigRefund(), [field]: value }, agent(sub)),
        422,
        'invalid_body',
      );
      // `kind` is a known field: a runtime may name its own kind, and no other (docs/spec.md section 5.4.2).
      const message = field === 'kind' ? 'must be equal to one of the allowed values' : 'unknown field';
      expect(problem.errors).toContainEqual({ pointer: `/${field}`, message });
      expect(await totals()).toEqual(before);
      const [n] = await t.db!.sql<
        { n: number }[]
      >`select count(*)::int as n from approvals where requester_sub = ${sub}`;
      expect(n!.n).toBe(0);
    });
    it(`grant and deny with "${field}" → 422, the approval untouched`, async () => {
      const { approval } = await create(newSub());
      const before = await totals();
      expectProblemJson(
        await grant(approval.id, approverToken('op-m'), { note: 'ok', [field]: value }),
        422,
        'invalid_body',
      );
      expectProblemJson(
        await deny(approval.id, approverToken('op-m'), { reason: 'no', [field]: value }),
        422,
        'invalid_body',
      );
      expectProblemJson(await grant(approval.id, approverToken('op-m'), { [field]: value }), 422, 'invalid_body');
      expect(await totals()).toEqual(before);
      await expectUntouched(approval.id);
    });
  }
  it('all of them at once, and nested under "approval" → 422, nothing stored', async () => {
    const before = await totals();
    expectProblemJson(await post(t.app, '/approvals', { ...bigRefund(), ...FIELDS }, agent(newSub())), 422);
    expectProblemJson(await post(t.app, '/approvals', { ...bigRefund(), approval: FIELDS }, agent(newSub())), 422);
    expect(await totals()).toEqual(before);
  });
  it('a created approval takes capability, presentation, kind and expiry from the policy and the server', async () => {
    const sub = newSub();
    const { approval, body } = await create(sub);
    expect(approval).toMatchObject({
      status: 'pending',
      kind: 'refund_over_cap',
      decided_by: null,
      requester: { sub, team: 'support', agent: 'bot' },
      capability: { order: body.args.order, amount: 150 },
      presentation: { order: body.args.order, amount: 150, note: 'twice' },
    });
    expect(Date.parse(approval.expires_at)).toBeLessThan(Date.now() + 86_400_000 + 60_000);
  });
});
