// Approvals over HTTP against a real PostgreSQL (docs/spec.md section 5): the full loop, idempotent create,
// who may grant, self-approval, visibility, races, redeem-once, hash binding, expiry, long-poll across
// two app instances, listing, and a database that goes away and comes back.
import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApprovalInputError } from '../../src/approvals/errors.js';
import { ListQueryError } from '../../src/kernel/errors.js';
import { createSql } from '../../src/db/connect.js';
import {
  agentToken,
  approverToken,
  bearer,
  createTestApp,
  post,
  signJwt,
  token,
  type TestApp,
} from '../helpers/app.js';
import { startPrivatePostgres, type PrivatePostgres, type TestDatabase } from '../helpers/db.js';

interface ApprovalBody {
  id: string;
  status: string;
  kind: string;
  hash: string;
  tool: string;
  args: Record<string, unknown>;
  capability: Record<string, unknown>;
  presentation: Record<string, unknown>;
  presentation_label: string;
  requester: { sub: string; team: string | null; agent: string | null };
  reason: string;
  rule: string;
  policies: { policy: string; digest: string }[];
  decided_by: string | null;
  decision_note: string | null;
  expires_at: string;
}
interface DecisionBody {
  decision: string;
  reason: string;
  rule: string;
  message: string;
  approval?: { kind: string; hash: string; id?: string; status?: string; capability: object; presentation: object };
}

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: 'prod', database: true });
});
afterAll(async () => t.close());

let seq = 0;
/** A fresh sub per test, so idempotency never joins two tests' approvals. */
const newSub = (label = 'agent'): string => `${label}-${++seq}-${randomUUID().slice(0, 8)}`;
/** A support-team agent token (the refund-support rule selects team support). */
const agent = (sub: string): string => token({ sub, team: 'support', agent: 'bot' });
/** A refund over 100: require_approval, with the payments approval shape. */
const bigRefund = (extra: Record<string, unknown> = {}) => ({
  tool: 'refund',
  args: { order: `O-${++seq}`, amount: 120, note: 'customer asked twice', ...extra },
});

const get = (app: TestApp, url: string, tok: string) => app.app.inject({ method: 'GET', url, headers: bearer(tok) });
const grant = (id: string, tok = approverToken(), body: unknown = { note: 'ok' }, app = t) =>
  post(app.app, `/approvals/${id}/grant`, body, tok);
const deny = (id: string, tok = approverToken(), body: unknown = { reason: 'no' }, app = t) =>
  post(app.app, `/approvals/${id}/deny`, body, tok);

async function requestApproval(
  sub: string,
  body = bigRefund(),
  app = t,
): Promise<{ approval: ApprovalBody; body: typeof body }> {
  const res = await post(app.app, '/approvals', body, agent(sub));
  expect(res.statusCode, res.body).toBe(201);
  return { approval: res.json() as ApprovalBody, body };
}

function expectProblem(res: LightMyRequestResponse, status: number): Record<string, unknown> {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({
    status,
    type: expect.any(String),
    title: expect.any(String),
    detail: expect.any(String),
  });
  return body;
}

const statusOf = async (id: string): Promise<string> =>
  ((await get(t, `/approvals/${id}`, approverToken())).json() as ApprovalBody).status;

describe('the full loop', () => {
  it('decide → require_approval → create → pending → grant → redeem once → require_approval again', async () => {
    const sub = newSub();
    const body = bigRefund();
    const first = await post(t.app, '/decide', body, agent(sub));
    expect(first.statusCode).toBe(403);
    const firstBody = first.json() as DecisionBody;
    expect(firstBody).toMatchObject({
      decision: 'require_approval',
      rule: 'refund-support',
      approval: { kind: 'refund_over_cap' },
    });
    expect(firstBody.approval).not.toHaveProperty('id');

    const created = await post(t.app, '/approvals', body, agent(sub));
    expect(created.statusCode).toBe(201);
    const a = created.json() as ApprovalBody;
    expect(a).toMatchObject({
      status: 'pending',
      kind: 'refund_over_cap',
      hash: firstBody.approval!.hash,
      tool: 'refund',
      args: body.args,
      capability: { order: body.args.order, amount: 120 },
      presentation: { order: body.args.order, amount: 120, note: 'customer asked twice' },
      requester: { sub, team: 'support', agent: 'bot' },
      rule: 'refund-support',
      reason: 'refund over 100 needs an operator',
      decided_by: null,
    });
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.presentation_label).toMatch(/model-chosen/i);
    expect(a.policies.map((p) => p.policy)).toEqual(['payments']);

    const shown = await get(t, `/approvals/${a.id}`, agent(sub));
    expect(shown.statusCode).toBe(200);
    expect(shown.json()).toMatchObject({ id: a.id, status: 'pending', presentation_label: a.presentation_label });

    const granted = await grant(a.id, approverToken('operator-loop'), { note: 'fine' });
    expect(granted.statusCode).toBe(200);
    expect(granted.json()).toMatchObject({
      id: a.id,
      status: 'granted',
      decided_by: 'operator-loop',
      decision_note: 'fine',
      presentation_label: a.presentation_label,
    });

    const redeemed = await post(t.app, '/decide', { ...body, approval_id: a.id }, agent(sub));
    expect(redeemed.statusCode).toBe(200);
    expect(redeemed.json()).toMatchObject({
      decision: 'allow',
      approval: { id: a.id, status: 'consumed', hash: a.hash },
    });

    const again = await post(t.app, '/decide', { ...body, approval_id: a.id }, agent(sub));
    expect(again.statusCode).toBe(403);
    expect(again.json()).toMatchObject({ decision: 'require_approval', approval: { id: a.id, status: 'consumed' } });
    // Waiting can never help a used approval: the model is told a new one is needed.
    expect(again.json().message).toBe(
      'The "refund" action needs an operator\'s approval (refund over 100 needs an operator). The approval you cited has already been used and cannot be used again: a new approval is needed. Request one, then try again; waiting for the old one will not help.',
    );
    expect(await statusOf(a.id)).toBe('consumed');

    // Every transition is in the events table.
    const events = await t.db!.sql<{ from_status: string | null; to_status: string; actor: string }[]>`
      select from_status, to_status, actor from approval_events where approval_id = ${a.id} order by id`;
    expect(events.map((e) => [e.from_status, e.to_status, e.actor])).toEqual([
      [null, 'pending', sub],
      ['pending', 'granted', 'operator-loop'],
      ['granted', 'consumed', sub],
    ]);
  });
});

describe('POST /approvals', () => {
  it('an allowed request is 409 with the decision body', async () => {
    const res = await post(t.app, '/approvals', { tool: 'refund', args: { order: 'A1', amount: 40 } }, agent(newSub()));
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ decision: 'allow', rule: 'refund-support' });
  });
  it('a denied request is 409 with the decision body', async () => {
    const res = await post(
      t.app,
      '/approvals',
      { tool: 'dispatch_vendor', args: { unitId: 'U1', estimateUsd: 5000 } },
      agent(newSub()),
    );
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ decision: 'deny', rule: 'vendor-hard-cap' });
  });
  it('an aborted request is 409 with the decision body', async () => {
    const res = await post(t.app, '/approvals', { tool: 'wipe_orders' }, agent(newSub()));
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ decision: 'abort' });
  });

  it('is idempotent: the same request twice is 201 then 200 with the same id', async () => {
    const sub = newSub();
    const body = bigRefund();
    const { approval } = await requestApproval(sub, body);
    // Key order and whitespace do not matter: the hash is of the parsed value.
    const reordered = `{ "args": {"note": "customer asked twice", "amount": 120, "order": "${body.args.order}"}, "tool": "refund" }`;
    const again = await t.app.inject({
      method: 'POST',
      url: '/approvals',
      headers: { ...bearer(agent(sub)), 'content-type': 'application/json' },
      payload: reordered,
    });
    expect(again.statusCode).toBe(200);
    expect((again.json() as ApprovalBody).id).toBe(approval.id);
    // Still the same one once granted (live), and a new one once consumed.
    expect((await grant(approval.id)).statusCode).toBe(200);
    const whileGranted = await post(t.app, '/approvals', body, agent(sub));
    expect(whileGranted.statusCode).toBe(200);
    expect(whileGranted.json()).toMatchObject({ id: approval.id, status: 'granted' });
    expect((await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub))).statusCode).toBe(200);
    const afterConsume = await post(t.app, '/approvals', body, agent(sub));
    expect(afterConsume.statusCode).toBe(201);
    expect((afterConsume.json() as ApprovalBody).id).not.toBe(approval.id);
  });

  it('20 concurrent identical creates make one approval', async () => {
    const sub = newSub();
    const body = bigRefund();
    const results = await Promise.all(Array.from({ length: 20 }, () => post(t.app, '/approvals', body, agent(sub))));
    const statuses = results.map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(19);
    expect(new Set(results.map((r) => (r.json() as ApprovalBody).id)).size).toBe(1);
    const [row] = await t.db!.sql<
      { n: number }[]
    >`select count(*)::int as n from approvals where requester_sub = ${sub}`;
    expect(row!.n).toBe(1);
  });

  it('the same request from another sub is another approval', async () => {
    const body = bigRefund();
    const a = await requestApproval(newSub(), body);
    const b = await requestApproval(newSub(), body);
    expect(b.approval.id).not.toBe(a.approval.id);
    expect(b.approval.hash).toBe(a.approval.hash);
  });

  for (const field of ['capability', 'presentation', 'hash', 'status', 'approval_id', 'requester', 'expires_at']) {
    it(`"${field}" in the body is refused (422 unknown field): the policy decides it`, async () => {
      const body = { ...bigRefund(), [field]: field === 'approval_id' ? randomUUID() : { order: 'Z9', amount: 1 } };
      const res = await post(t.app, '/approvals', body, agent(newSub()));
      const problem = expectProblem(res, 422);
      expect(problem.errors).toContainEqual({ pointer: `/${field}`, message: 'unknown field' });
    });
  }
  it('answers numbers exactly as the request wrote them (decide, create, get, list, grant): what the grant lets run', async () => {
    const sub = newSub();
    const order = `O-${++seq}`;
    const payload = `{"tool":"refund","args":{"order":"${order}","amount":120.50,"note":"n"}}`;
    const decided = await t.app.inject({
      method: 'POST',
      url: '/decide',
      payload,
      headers: { ...bearer(agent(sub)), 'content-type': 'application/json' },
    });
    expect(decided.statusCode).toBe(403);
    expect(decided.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(decided.body).toMatch(/"capability":\{"amount":120\.50,/);
    const created = await t.app.inject({
      method: 'POST',
      url: '/approvals',
      payload,
      headers: { ...bearer(agent(sub)), 'content-type': 'application/json' },
    });
    expect(created.statusCode).toBe(201);
    expect(created.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(created.body).toContain('"amount":120.50');
    const { id } = created.json() as ApprovalBody;
    expect((await get(t, `/approvals/${id}`, approverToken())).body).toContain('"amount":120.50');
    // A list carries summaries: no arguments to misquote.
    const listed = (await get(t, '/approvals?status=pending&limit=200', approverToken())).json() as {
      items: Record<string, unknown>[];
    };
    expect(listed.items.find((a) => a.id === id)).not.toHaveProperty('args');
    const granted = await grant(id);
    expect(granted.statusCode).toBe(200);
    expect(granted.body).toContain('"amount":120.50');
    const again = await grant(id);
    expectProblem(again, 409);
    expect(again.body).toContain('"amount":120.50');
    expect(again.json()).toMatchObject({ code: 'conflict', approval: { id, status: 'granted' } });
  });

  it('identity in the body is 422 identity_in_body', async () => {
    expectProblem(await post(t.app, '/approvals', { ...bigRefund(), user: 'someone-else' }, agent(newSub())), 422);
  });
});

describe('who may grant or deny', () => {
  let id: string;
  beforeAll(async () => {
    id = (await requestApproval(newSub())).approval.id;
  });
  const attempts: [string, () => string, number][] = [
    ['an agent', () => agentToken('not-an-approver'), 403],
    ['roles ["APPROVER"] (case differs)', () => token({ sub: 'op-x', roles: ['APPROVER'] }), 403],
    ['roles ["approvers"]', () => token({ sub: 'op-x', roles: ['approvers'] }), 403],
    ['roles ["admin"] only', () => token({ sub: 'op-x', roles: ['admin'] }), 403],
    ['roles "approver" as a string', () => token({ sub: 'op-x', roles: 'approver' as unknown as string[] }), 401],
  ];
  for (const [name, tok, status] of attempts) {
    it(`${name}: ${status} on grant and on deny, status stays pending`, async () => {
      expectProblem(await grant(id, tok()), status);
      expectProblem(await deny(id, tok()), status);
      expect(await statusOf(id)).toBe('pending');
    });
  }
  it('without the role it is 403 before the body is read: invalid, oversized or malformed bodies included', async () => {
    const agentTok = agentToken('not-an-approver');
    expectProblem(await grant(id, agentTok, { note: 'x', roles: ['approver'] }), 403);
    expectProblem(await grant(id, agentTok, { note: 'x'.repeat(2001) }), 403);
    expectProblem(await deny(id, agentTok, { reason: 'x', bogus: 1 }), 403);
    const malformed = await t.app.inject({
      method: 'POST',
      url: `/approvals/${id}/grant`,
      headers: { ...bearer(agentTok), 'content-type': 'application/json' },
      payload: '{"note":',
    });
    expectProblem(malformed, 403);
    expect(await statusOf(id)).toBe('pending');
  });
  it('the approver role (or any server-owned field) in the body is refused: 422', async () => {
    expectProblem(await grant(id, approverToken(), { note: 'x', roles: ['approver'] }), 422);
    expectProblem(await grant(id, approverToken(), { status: 'granted' }), 422);
    expectProblem(await deny(id, approverToken(), { reason: 'x', decided_by: 'someone' }), 422);
    expect(await statusOf(id)).toBe('pending');
  });
  it('an unknown or malformed id is 404', async () => {
    expectProblem(await grant(randomUUID()), 404);
    expectProblem(await grant('not-a-uuid'), 404);
    expectProblem(await deny('01234567-89ab-7def-8123-456789abcdef'), 404);
  });
  it('a grant without a body is accepted (no note)', async () => {
    const a = (await requestApproval(newSub())).approval;
    const res = await t.app.inject({
      method: 'POST',
      url: `/approvals/${a.id}/grant`,
      headers: bearer(approverToken()),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'granted', decision_note: null });
  });
  it('a note or reason of 2000 characters is accepted; 2001 is 422', async () => {
    const a = (await requestApproval(newSub())).approval;
    const b = (await requestApproval(newSub())).approval;
    expectProblem(await grant(a.id, approverToken(), { note: 'n'.repeat(2001) }), 422);
    expectProblem(await deny(a.id, approverToken(), { reason: 'r'.repeat(2001) }), 422);
    expect(await statusOf(a.id)).toBe('pending');
    expect((await grant(a.id, approverToken(), { note: 'n'.repeat(2000) })).statusCode).toBe(200);
    expect((await deny(b.id, approverToken(), { reason: 'é'.repeat(2000) })).statusCode).toBe(200);
  });
  it('a note of the wrong type is 422', async () => {
    const a = (await requestApproval(newSub())).approval;
    expectProblem(await grant(a.id, approverToken(), { note: 123 }), 422);
    expectProblem(await deny(a.id, approverToken(), { reason: ['x'] }), 422);
  });
});

describe('flooding: MAX_PENDING_APPROVALS per requester', () => {
  it('past the cap POST /approvals is 429 problem+json with Retry-After; operators still list and decide; a decision frees a place', async () => {
    const capped = await createTestApp({ env: 'prod', database: true, maxPendingApprovals: 2 });
    try {
      const sub = newSub('flood');
      const first = (await requestApproval(sub, bigRefund(), capped)).approval;
      const second = await requestApproval(sub, bigRefund(), capped);
      const refused = await post(capped.app, '/approvals', bigRefund(), agent(sub));
      expect(expectProblem(refused, 429)).toMatchObject({
        code: 'too_many_pending',
        type: 'urn:gatehouse:problem:too_many_pending',
      });
      expect(refused.headers['retry-after']).toBe('60');
      // Re-requesting one that is pending is still the idempotent 200.
      const again = await post(capped.app, '/approvals', second.body, agent(sub));
      expect(again.statusCode).toBe(200);
      expect((again.json() as ApprovalBody).id).toBe(second.approval.id);
      // Another agent is not affected, and the operators' queue works as before.
      expect((await post(capped.app, '/approvals', bigRefund(), agent(newSub('calm')))).statusCode).toBe(201);
      const queue = await get(capped, '/approvals?status=pending&limit=200', approverToken());
      expect(queue.statusCode).toBe(200);
      expect((queue.json() as { items: ApprovalBody[] }).items.filter((a) => a.requester.sub === sub)).toHaveLength(2);
      expect((await deny(first.id, approverToken(), { reason: 'no' }, capped)).statusCode).toBe(200);
      expect((await post(capped.app, '/approvals', bigRefund(), agent(sub))).statusCode).toBe(201);
    } finally {
      await capped.close();
    }
  });
});

describe('self-approval', () => {
  it('an approver cannot grant or deny its own request: 403, status stays pending', async () => {
    const sub = newSub('dual');
    const { approval } = await requestApproval(sub);
    const self = token({ sub, team: 'support', roles: ['approver'] });
    expectProblem(await grant(approval.id, self), 403);
    expectProblem(await deny(approval.id, self), 403);
    expect(await statusOf(approval.id)).toBe('pending');
  });
  it('10 concurrent self-grants and self-denies: all 403, status stays pending', async () => {
    const sub = newSub('dual');
    const { approval } = await requestApproval(sub);
    const self = token({ sub, roles: ['approver'] });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? grant(approval.id, self) : deny(approval.id, self))),
    );
    expect(results.map((r) => r.statusCode)).toEqual(Array(10).fill(403));
    expect(await statusOf(approval.id)).toBe('pending');
    // Another approver still can.
    expect((await grant(approval.id, approverToken('operator-other'))).statusCode).toBe(200);
  });
});

describe('visibility', () => {
  let owner: string;
  let other: string;
  let id: string;
  beforeAll(async () => {
    owner = newSub('owner');
    other = newSub('other');
    id = (await requestApproval(owner)).approval.id;
    await requestApproval(other);
  });
  it("another agent's approval by id is 404, not 403 (also with ?wait)", async () => {
    expectProblem(await get(t, `/approvals/${id}`, agent(other)), 404);
    expectProblem(await get(t, `/approvals/${id}?wait=1`, agent(other)), 404);
    expect((await get(t, `/approvals/${id}`, agent(owner))).statusCode).toBe(200);
  });
  it("another agent's approval is absent from its list; the owner sees it", async () => {
    const otherList = (await get(t, '/approvals?limit=200', agent(other))).json() as { items: ApprovalBody[] };
    expect(otherList.items.length).toBeGreaterThan(0);
    expect(otherList.items.every((a) => a.requester.sub === other)).toBe(true);
    expect(otherList.items.map((a) => a.id)).not.toContain(id);
    const ownerList = (await get(t, '/approvals?limit=200', agent(owner))).json() as { items: ApprovalBody[] };
    expect(ownerList.items.map((a) => a.id)).toEqual([id]);
    expect((await get(t, `/approvals/${id}`, agent(owner))).json()).toMatchObject({
      presentation_label: expect.stringMatching(/model-chosen/i),
    });
  });
  it("approvers see everyone's", async () => {
    expect((await get(t, `/approvals/${id}`, approverToken('viewer'))).statusCode).toBe(200);
    const all = (await get(t, '/approvals?limit=200', approverToken('viewer'))).json() as { items: ApprovalBody[] };
    const subs = new Set(all.items.map((a) => a.requester.sub));
    expect(subs.has(owner)).toBe(true);
    expect(subs.has(other)).toBe(true);
  });
  it("another agent cannot redeem someone else's granted approval", async () => {
    const body = bigRefund();
    const { approval } = await requestApproval(owner, body);
    expect((await grant(approval.id)).statusCode).toBe(200);
    const thief = await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(other));
    expect(thief.statusCode).toBe(403);
    const tb = thief.json() as DecisionBody;
    expect(tb.decision).toBe('require_approval');
    expect(tb.approval).not.toHaveProperty('id'); // nothing said about someone else's approval
    expect(await statusOf(approval.id)).toBe('granted');
    expect((await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(owner))).statusCode).toBe(200);
  });
});

describe('races', () => {
  it('20 concurrent grants and denies: exactly one 200, the rest 409 with the current state', async () => {
    const { approval } = await requestApproval(newSub());
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0
          ? grant(approval.id, approverToken(`op-${i}`))
          : deny(approval.id, approverToken(`op-${i}`), { reason: `r${i}` }),
      ),
    );
    const winners = results.filter((r) => r.statusCode === 200);
    expect(winners).toHaveLength(1);
    const won = winners[0]!.json() as ApprovalBody;
    const losers = results.filter((r) => r.statusCode !== 200);
    expect(losers).toHaveLength(19);
    for (const l of losers) {
      const p = expectProblem(l, 409);
      expect(p.approval).toMatchObject({ id: approval.id, status: won.status, decided_by: won.decided_by });
    }
    expect(await statusOf(approval.id)).toBe(won.status);
    const [row] = await t.db!.sql<{ n: number }[]>`
      select count(*)::int as n from approval_events where approval_id = ${approval.id} and from_status = 'pending'`;
    expect(row!.n).toBe(1);
  });

  it('terminal states stay terminal: grant after deny, deny after grant, grant after consume → 409', async () => {
    const a = (await requestApproval(newSub())).approval;
    expect((await deny(a.id)).statusCode).toBe(200);
    expect(expectProblem(await grant(a.id), 409).approval).toMatchObject({ status: 'denied' });
    const sub = newSub();
    const { approval: b, body } = await requestApproval(sub);
    expect((await grant(b.id)).statusCode).toBe(200);
    expect(expectProblem(await deny(b.id), 409).approval).toMatchObject({ status: 'granted' });
    expect((await post(t.app, '/decide', { ...body, approval_id: b.id }, agent(sub))).statusCode).toBe(200);
    expect(expectProblem(await grant(b.id), 409).approval).toMatchObject({ status: 'consumed' });
  });

  it('redeem exactly once under 20 concurrent /decide calls', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    expect((await grant(approval.id)).statusCode).toBe(200);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub))),
    );
    const allowed = results.filter((r) => r.statusCode === 200);
    expect(allowed).toHaveLength(1);
    expect(allowed[0]!.json()).toMatchObject({ decision: 'allow', approval: { status: 'consumed' } });
    for (const r of results.filter((x) => x.statusCode !== 200)) {
      expect(r.statusCode).toBe(403);
      expect(r.json()).toMatchObject({
        decision: 'require_approval',
        approval: { id: approval.id, status: 'consumed' },
      });
    }
    expect(await statusOf(approval.id)).toBe('consumed');
  });
});

describe('redeeming with approval_id', () => {
  it("a denied approval answers 403 deny with the operator's reason", async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    expect((await deny(approval.id, approverToken(), { reason: 'refunds are frozen this week' })).statusCode).toBe(200);
    const res = await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub));
    expect(res.statusCode).toBe(403);
    const d = res.json() as DecisionBody;
    expect(d).toMatchObject({ decision: 'deny', approval: { id: approval.id, status: 'denied' } });
    expect(d.reason).toContain('refunds are frozen this week');
    expect(d.message).toContain('refunds are frozen this week');
  });

  it('a denied approval: a changed request that still needs approval is denied too; one the policy allows is allowed', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    expect((await deny(approval.id, approverToken(), { reason: 'no' })).statusCode).toBe(200);
    const bigger = { ...body, args: { ...body.args, amount: 150 } }; // another hash, still over the cap
    const denied = await post(t.app, '/decide', { ...bigger, approval_id: approval.id }, agent(sub));
    expect(denied.statusCode).toBe(403);
    expect(denied.json()).toMatchObject({ decision: 'deny', approval: { id: approval.id, status: 'denied' } });
    // Under the confirm cap the policy allows it outright: the cited approval is not consulted, as
    // without it (citing an approval never makes an answer stricter than not citing it).
    const small = { ...body, args: { ...body.args, amount: 40 } };
    const allowed = await post(t.app, '/decide', { ...small, approval_id: approval.id }, agent(sub));
    expect(allowed.statusCode).toBe(200);
    expect(allowed.json()).toMatchObject({ decision: 'allow', rule: 'refund-support' });
    expect((await post(t.app, '/decide', small, agent(sub))).json()).toMatchObject({
      decision: 'allow',
      rule: 'refund-support',
    });
  });

  it('a pending approval answers require_approval with status pending', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    const res = await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub));
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      decision: 'require_approval',
      approval: { id: approval.id, status: 'pending', hash: approval.hash },
    });
    // Still pending: waiting is what helps.
    expect(res.json().message).toMatch(/Wait for the approval, then try again\./);
  });

  it('an approval is bound to its context: another context, or none, cannot redeem it', async () => {
    const sub = newSub();
    const body = { ...bigRefund(), context: { sandbox: { network: false }, repo: 'acme/api' } };
    const { approval } = await requestApproval(sub, body);
    expect(approval).toMatchObject({ context: body.context });
    expect((await grant(approval.id)).statusCode).toBe(200);
    for (const context of [{ sandbox: { network: true }, repo: 'acme/api' }, { repo: 'acme/api' }, undefined]) {
      const other = { tool: body.tool, args: body.args, ...(context ? { context } : {}) };
      const res = await post(t.app, '/decide', { ...other, approval_id: approval.id }, agent(sub));
      expect(res.statusCode).toBe(403);
      const d = res.json() as DecisionBody;
      expect(d.decision).toBe('require_approval');
      expect(d.approval?.hash).not.toBe(approval.hash);
      expect(await statusOf(approval.id)).toBe('granted');
    }
    // The same context, its keys in another order, redeems it.
    const same = { tool: body.tool, args: body.args, context: { repo: 'acme/api', sandbox: { network: false } } };
    expect((await post(t.app, '/decide', { ...same, approval_id: approval.id }, agent(sub))).statusCode).toBe(200);
    // Without a context (or with an empty one) the hash is what it was before contexts existed.
    const request = bigRefund();
    const plain = (await post(t.app, '/decide', request, agent(sub))).json() as DecisionBody;
    const empty = (await post(t.app, '/decide', { ...request, context: {} }, agent(sub))).json() as DecisionBody;
    expect(empty.approval?.hash).toBe(plain.approval?.hash);
  });

  it('a changed argument gets a NEW hash and does not consume the approval', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    expect((await grant(approval.id)).statusCode).toBe(200);
    const changed = { ...body, args: { ...body.args, amount: 130 } };
    const res = await post(t.app, '/decide', { ...changed, approval_id: approval.id }, agent(sub));
    expect(res.statusCode).toBe(403);
    const d = res.json() as DecisionBody;
    expect(d.decision).toBe('require_approval');
    expect(d.approval?.hash).not.toBe(approval.hash);
    expect(d.approval).not.toHaveProperty('id');
    expect(await statusOf(approval.id)).toBe('granted');
    // A number written differently but equal in value (120 vs 120.0) is a different lexeme: new hash too.
    const relexed = await t.app.inject({
      method: 'POST',
      url: '/decide',
      headers: { ...bearer(agent(sub)), 'content-type': 'application/json' },
      payload: `{"tool":"refund","args":{"order":"${body.args.order}","amount":120.0,"note":"customer asked twice"},"approval_id":"${approval.id}"}`,
    });
    expect(relexed.statusCode).toBe(403);
    expect(await statusOf(approval.id)).toBe('granted');
    // The original request still redeems it.
    expect((await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub))).statusCode).toBe(200);
  });

  it('a changed presentation-only argument (note) gets a NEW hash and does not consume the approval', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    expect((await grant(approval.id)).statusCode).toBe(200);
    for (const args of [
      { ...body.args, note: 'different words' },
      { order: body.args.order, amount: body.args.amount },
    ]) {
      const res = await post(t.app, '/decide', { tool: 'refund', args, approval_id: approval.id }, agent(sub));
      expect(res.statusCode).toBe(403);
      const d = res.json() as DecisionBody;
      expect(d.decision).toBe('require_approval');
      expect(d.approval?.hash).not.toBe(approval.hash);
      // The capability (order, amount) is the same; only what the reviewer saw changed.
      expect(d.approval?.capability).toEqual(approval.capability);
      expect(d.approval?.presentation).not.toEqual(approval.presentation);
    }
    expect(await statusOf(approval.id)).toBe('granted');
  });

  it('an unknown or malformed approval_id answers the fresh decision, never allow', async () => {
    const body = bigRefund();
    for (const approvalId of [randomUUID(), 'nope']) {
      const res = await post(t.app, '/decide', { ...body, approval_id: approvalId }, agent(newSub()));
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ decision: 'require_approval' });
    }
  });

  it('an approval_id on a request that is allowed anyway: allow, the approval untouched', async () => {
    const sub = newSub();
    const { approval } = await requestApproval(sub);
    expect((await grant(approval.id)).statusCode).toBe(200);
    const res = await post(
      t.app,
      '/decide',
      { tool: 'refund', args: { order: 'A1', amount: 40 }, approval_id: approval.id },
      agent(sub),
    );
    expect(res.statusCode).toBe(200);
    expect(await statusOf(approval.id)).toBe('granted');
  });
});

describe('expiry (database clock)', () => {
  const age = (id: string) => t.db!.sql`update approvals set expires_at = now() - interval '1 second' where id = ${id}`;

  it('a pending approval past expires_at reads expired; grant and deny are 409', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    await age(approval.id);
    expect((await get(t, `/approvals/${approval.id}`, agent(sub))).json()).toMatchObject({ status: 'expired' });
    expect(expectProblem(await grant(approval.id), 409).approval).toMatchObject({ status: 'expired' });
    expect(expectProblem(await deny(approval.id), 409).approval).toMatchObject({ status: 'expired' });
    const res = await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub));
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      decision: 'require_approval',
      approval: { id: approval.id, status: 'expired' },
    });
    expect(res.json().message).toMatch(
      /\. The approval you cited has expired and cannot be used again: a new approval is needed\. /,
    );
    expect(res.json().message).not.toContain('Wait for the approval');
    // A new request for the same thing makes a new approval.
    const renewed = await post(t.app, '/approvals', body, agent(sub));
    expect(renewed.statusCode).toBe(201);
    expect((renewed.json() as ApprovalBody).id).not.toBe(approval.id);
  });

  it('a granted approval past expires_at cannot be redeemed', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    expect((await grant(approval.id)).statusCode).toBe(200);
    await age(approval.id);
    const res = await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub));
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({
      decision: 'require_approval',
      approval: { id: approval.id, status: 'expired' },
    });
    expect(res.json().message).toMatch(
      /The approval you cited has expired and cannot be used again: a new approval is needed/,
    );
    expect(await statusOf(approval.id)).toBe('expired');
  });

  it('a tiny grant TTL: the grant lapses by itself', async () => {
    const short = await createTestApp({ env: 'prod', database: t.db!, grantTtlMs: 1 });
    try {
      const sub = newSub();
      const { approval, body } = await requestApproval(sub, bigRefund(), short);
      expect((await grant(approval.id, approverToken(), {}, short)).statusCode).toBe(200);
      await t.db!.sql`select pg_sleep(0.05)`;
      const res = await post(short.app, '/decide', { ...body, approval_id: approval.id }, agent(sub));
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ decision: 'require_approval', approval: { status: 'expired' } });
    } finally {
      await short.close();
    }
  });
});

describe('GET /approvals/:id?wait=N', () => {
  let second: TestApp;
  beforeAll(async () => {
    second = await createTestApp({ env: 'prod', database: t.db! });
  });
  afterAll(async () => second.close());

  it('returns as soon as a grant happens through a second app instance on the same database', async () => {
    const sub = newSub();
    const { approval } = await requestApproval(sub);
    const waiting = get(t, `/approvals/${approval.id}?wait=30`, agent(sub));
    await new Promise((r) => setTimeout(r, 300));
    expect(
      (await grant(approval.id, approverToken('operator-replica'), { note: 'from replica 2' }, second)).statusCode,
    ).toBe(200);
    // Bounded: the wait asked for 30 s; the grant must end it long before.
    const guard = new Promise<'timed out'>((r) => setTimeout(() => r('timed out'), 15_000).unref());
    const res = await Promise.race([waiting, guard]);
    expect(res).not.toBe('timed out');
    const done = res as LightMyRequestResponse;
    expect(done.statusCode).toBe(200);
    expect(done.json()).toMatchObject({ id: approval.id, status: 'granted', decided_by: 'operator-replica' });
  });

  it('?wait=1 on a still-pending approval returns pending after the wait', async () => {
    const sub = newSub();
    const { approval } = await requestApproval(sub);
    const started = Date.now();
    const res = await get(second, `/approvals/${approval.id}?wait=1`, agent(sub));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'pending' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('a decided approval returns at once whatever the wait', async () => {
    const sub = newSub();
    const { approval } = await requestApproval(sub);
    expect((await deny(approval.id)).statusCode).toBe(200);
    const res = await get(t, `/approvals/${approval.id}?wait=60`, agent(sub));
    expect(res.json()).toMatchObject({ status: 'denied' });
  });

  for (const wait of ['61', '-1', '1.5', 'abc', '1e9']) {
    it(`wait=${wait} → 400`, async () => {
      const sub = newSub();
      const { approval } = await requestApproval(sub);
      expectProblem(await get(t, `/approvals/${approval.id}?wait=${wait}`, agent(sub)), 400);
    });
  }
  it('an unknown query parameter → 400', async () => {
    expectProblem(await get(t, `/approvals/${randomUUID()}?foo=1`, approverToken()), 400);
  });
});

describe('GET /approvals: filters and keyset pagination', () => {
  const sub = newSub('lister');
  const ids: string[] = [];
  let vendorId: string;
  beforeAll(async () => {
    for (let i = 0; i < 5; i++) ids.push((await requestApproval(sub)).approval.id);
    const v = await post(
      t.app,
      '/approvals',
      { tool: 'dispatch_vendor', args: { unitId: 'U1', estimateUsd: 320 } },
      agent(sub),
    );
    expect(v.statusCode).toBe(201);
    vendorId = (v.json() as ApprovalBody).id;
    ids.push(vendorId);
    expect((await grant(ids[0]!)).statusCode).toBe(200);
    expect((await deny(ids[1]!)).statusCode).toBe(200);
  });
  const list = async (query: string, tok = agent(sub)) => {
    const res = await get(t, `/approvals${query}`, tok);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { items: ApprovalBody[]; next_cursor: string | null };
  };

  it('newest first, all of mine', async () => {
    const page = await list('?limit=200');
    expect(page.items.map((a) => a.id)).toEqual([...ids].reverse());
    expect(page.next_cursor).toBeNull();
  });
  it('status filter', async () => {
    expect((await list('?status=pending')).items.map((a) => a.id)).toEqual([ids[5], ids[4], ids[3], ids[2]]);
    expect((await list('?status=granted')).items.map((a) => a.id)).toEqual([ids[0]]);
    expect((await list('?status=denied')).items.map((a) => a.id)).toEqual([ids[1]]);
    expect((await list('?status=consumed')).items).toEqual([]);
  });
  it('tool filter', async () => {
    expect((await list('?tool=dispatch_vendor')).items.map((a) => a.id)).toEqual([vendorId]);
    expect((await list('?tool=refund')).items).toHaveLength(5);
    expect((await list('?tool=refund&status=pending')).items).toHaveLength(3);
    expect((await list('?tool=nothing_like_it')).items).toEqual([]);
  });
  it('limit and cursor walk every item once, newest first', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await list(`?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.items.map((a) => a.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
  });
  it('a cursor with filters pages within the filter', async () => {
    const first = await list('?status=pending&limit=3');
    expect(first.items).toHaveLength(3);
    expect(first.next_cursor).not.toBeNull();
    const rest = await list(`?status=pending&limit=3&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(rest.items.map((a) => a.id)).toEqual([ids[2]]);
    expect(rest.next_cursor).toBeNull();
  });
  for (const [name, query] of [
    ['a bad cursor', '?cursor=not-a-cursor'],
    [
      'a cursor with a bad date',
      `?cursor=${Buffer.from(`2024-13-40T00:00:00.000000Z ${randomUUID()}`).toString('base64url')}`,
    ],
    ['limit=0', '?limit=0'],
    ['limit=201', '?limit=201'],
    ['limit=abc', '?limit=abc'],
    ['an unknown status', '?status=approved'],
    ['an unknown parameter', '?team=support'],
  ] as const) {
    it(`${name} → 400`, async () => {
      expectProblem(await get(t, `/approvals${query}`, agent(sub)), 400);
    });
  }
  const cursorAt = (at: string): string => Buffer.from(`${at} ${randomUUID()}`).toString('base64url');
  it('a forged cursor in year 0000 (JS Date accepts it, PostgreSQL does not) → 400 invalid_cursor, not 500', async () => {
    const body = expectProblem(
      await get(t, `/approvals?cursor=${cursorAt('0000-01-01T00:00:00.000000Z')}`, agent(sub)),
      400,
    );
    expect(body).toMatchObject({ code: 'invalid_query', errors: [{ pointer: '/cursor', message: 'invalid_cursor' }] });
  });
  it('cursors at the ends of the range PostgreSQL holds are accepted', async () => {
    expect((await list(`?cursor=${cursorAt('0001-01-01T00:00:00.000000Z')}`)).items).toEqual([]);
    expect((await list(`?limit=200&cursor=${cursorAt('9999-12-31T23:59:59.999999Z')}`)).items.map((a) => a.id)).toEqual(
      [...ids].reverse(),
    );
  });
  it('a filter the store refuses points at its own parameter', async () => {
    const body = expectProblem(await get(t, '/approvals?tool=%00', agent(sub)), 400);
    expect(body).toMatchObject({ code: 'invalid_query', errors: [{ pointer: '/tool', message: 'invalid_filter' }] });
  });
});

describe('GET /approvals: kind, requester, search, history, order and count', () => {
  const alice = newSub('alice');
  const bob = newSub('bob');
  const made: ApprovalBody[] = [];
  beforeAll(async () => {
    // alice: two refunds and a vendor dispatch (another kind); bob: one refund, run "run-x7".
    made.push(
      (await requestApproval(alice, { tool: 'refund', args: { order: 'Q-100%_', amount: 120, note: 'first' } }))
        .approval,
    );
    made.push(
      (await requestApproval(alice, { tool: 'refund', args: { order: 'Q-2', amount: 130, note: 'second' } })).approval,
    );
    const v = await post(
      t.app,
      '/approvals',
      { tool: 'dispatch_vendor', args: { unitId: 'U9', estimateUsd: 320 } },
      agent(alice),
    );
    made.push(v.json() as ApprovalBody);
    made.push(
      (await requestApproval(bob, { ...bigRefund(), run: { id: 'run-x7' } } as ReturnType<typeof bigRefund>)).approval,
    );
    expect(
      (
        await deny(made[1]!.id, approverToken('op-history'), {
          note: 'Duplicate of Q-1, internal',
          message: 'Declined.',
        })
      ).statusCode,
    ).toBe(200);
    expect((await grant(made[0]!.id, approverToken('op-history'), { note: 'Verified by phone' })).statusCode).toBe(200);
  });
  const ids = async (query: string, tok = approverToken()): Promise<string[]> => {
    const res = await get(t, `/approvals${query}`, tok);
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { items: ApprovalBody[] }).items.map((a) => a.id);
  };
  const at = (...i: number[]): string[] => i.map((n) => made[n]!.id);

  it('kind and requester filter exactly', async () => {
    expect(await ids(`?requester=${alice}`)).toEqual(at(2, 1, 0));
    expect(await ids(`?requester=${alice}&kind=${made[2]!.kind}`)).toEqual(at(2));
    expect(await ids(`?requester=${alice}&kind=refund_over`)).toEqual([]);
    // A requester filter never widens what a non-approver sees.
    expect(await ids(`?requester=${alice}`, agent(bob))).toEqual([]);
  });

  it('q finds text in the arguments, the run id, the requester and the approver, case-insensitively; LIKE characters are literal', async () => {
    expect(await ids(`?requester=${alice}&q=q-100`)).toEqual(at(0));
    expect(await ids(`?q=${encodeURIComponent('100%_')}`)).toEqual(at(0));
    expect(await ids(`?requester=${alice}&q=${encodeURIComponent('%')}`)).toEqual(at(0));
    expect(await ids('?q=RUN-X7')).toEqual(at(3));
    expect(await ids(`?q=${bob}`)).toEqual(at(3));
    expect(await ids(`?requester=${alice}&q=op-history`)).toEqual(at(1, 0));
    expect(await ids(`?q=${made[2]!.id.slice(-12)}`)).toEqual(at(2));
  });

  it('q reads decision notes for approvers only; the message for anyone who may see it', async () => {
    expect(await ids(`?requester=${alice}&q=internal`)).toEqual(at(1));
    expect(await ids('?q=internal', agent(alice))).toEqual([]);
    expect(await ids('?q=declined', agent(alice))).toEqual(at(1));
  });

  it('decided=true is the history: what an operator decided, with who, when and the note', async () => {
    const res = await get(t, `/approvals?requester=${alice}&decided=true`, approverToken());
    const items = (res.json() as { items: (ApprovalBody & { decided_at: string; decision_message: string | null })[] })
      .items;
    expect(items.map((a) => [a.id, a.status, a.decided_by, a.decision_note, a.decision_message])).toEqual([
      [made[1]!.id, 'denied', 'op-history', 'Duplicate of Q-1, internal', 'Declined.'],
      [made[0]!.id, 'granted', 'op-history', 'Verified by phone', null],
    ]);
    expect(items.every((a) => typeof a.decided_at === 'string')).toBe(true);
  });

  it('order=oldest walks the same approvals the other way, page by page; count counts all pages', async () => {
    const query = `?requester=${alice}&order=oldest&limit=2&count=true`;
    const first = (await get(t, `/approvals${query}`, approverToken())).json() as {
      items: ApprovalBody[];
      next_cursor: string;
      count: number;
    };
    expect(first.items.map((a) => a.id)).toEqual(at(0, 1));
    expect(first.count).toBe(3);
    const rest = (await get(t, `/approvals${query}&cursor=${first.next_cursor}`, approverToken())).json() as {
      items: ApprovalBody[];
      next_cursor: null;
    };
    expect(rest.items.map((a) => a.id)).toEqual(at(2));
    expect(rest.next_cursor).toBeNull();
    // Without count=true, no count.
    expect((await get(t, `/approvals?requester=${alice}`, approverToken())).json()).not.toHaveProperty('count');
    expect(
      (
        (await get(t, `/approvals?requester=${alice}&status=pending&count=true&limit=1`, approverToken())).json() as {
          count: number;
        }
      ).count,
    ).toBe(1);
    // A cursor of one order is refused by the other.
    const wrong = expectProblem(
      await get(t, `/approvals?requester=${alice}&cursor=${first.next_cursor}`, approverToken()),
      400,
    );
    expect(wrong).toMatchObject({ errors: [{ pointer: '/cursor', message: 'invalid_cursor' }] });
  });

  it('a filter value the store cannot hold points at its parameter', async () => {
    for (const name of ['kind', 'requester', 'q']) {
      const body = expectProblem(await get(t, `/approvals?${name}=%00`, approverToken()), 400);
      expect(body).toMatchObject({
        code: 'invalid_query',
        errors: [{ pointer: `/${name}`, message: 'invalid_filter' }],
      });
    }
  });
});

describe("a decision's two texts: the note for the record, the message for the agent", () => {
  it('the model is told the message, never the note; the requester reads the message, approvers both', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    const note = 'Looks like fraud, do not tell them';
    const message = 'An operator declined this refund.';
    const denied = await deny(approval.id, approverToken(), { note, message });
    expect(denied.json()).toMatchObject({ status: 'denied', decision_note: note, decision_message: message });
    const d = (await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub))).json() as DecisionBody;
    expect(d.decision).toBe('deny');
    expect(d.message).toContain(message);
    expect(`${d.message} ${d.reason}`).not.toContain('fraud');
    expect((await get(t, `/approvals/${approval.id}`, agent(sub))).json()).toMatchObject({
      decision_note: null,
      decision_message: message,
    });
    expect((await get(t, `/approvals/${approval.id}`, approverToken('operator-2'))).json()).toMatchObject({
      decision_note: note,
      decision_message: message,
    });
    const listed = (await get(t, '/approvals?status=denied', agent(sub))).json() as { items: ApprovalBody[] };
    expect(listed.items.find((a) => a.id === approval.id)).toMatchObject({
      decision_note: null,
      decision_message: message,
    });
    const events = await t.db!.sql<{ note: string | null; message: string | null }[]>`
      select note, message from approval_events where approval_id = ${approval.id} and to_status = 'denied'`;
    expect(events).toEqual([{ note, message }]);
  });

  it('a note alone tells the model nothing of it', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    await deny(approval.id, approverToken(), { note: 'internal reasons' });
    const d = (await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub))).json() as DecisionBody;
    expect(d.reason).toBe(`an operator denied approval ${approval.id}`);
    expect(d.message).not.toContain('internal');
  });

  it("an older client's `reason` is both, as it always was; with a note or a message it stands for the other", async () => {
    const sub = newSub();
    const first = await requestApproval(sub);
    expect((await deny(first.approval.id, approverToken(), { reason: 'frozen this week' })).json()).toMatchObject({
      decision_note: 'frozen this week',
      decision_message: 'frozen this week',
    });
    const second = await requestApproval(sub);
    expect((await deny(second.approval.id, approverToken(), { note: 'n', reason: 'r' })).json()).toMatchObject({
      decision_note: 'n',
      decision_message: 'r',
    });
  });

  it("a grant's note is for the record: the requester does not see it", async () => {
    const sub = newSub();
    const { approval } = await requestApproval(sub);
    await grant(approval.id, approverToken(), { note: 'called the customer' });
    expect((await get(t, `/approvals/${approval.id}`, agent(sub))).json()).toMatchObject({
      status: 'granted',
      decision_note: null,
      decision_message: null,
    });
  });

  it('a message the store cannot hold is 422 naming it', async () => {
    const sub = newSub();
    const { approval } = await requestApproval(sub);
    const res = await deny(approval.id, approverToken(), { message: 'a\u0000b' });
    expect(expectProblem(res, 422)).toMatchObject({ errors: [{ pointer: '/message' }] });
  });
});

describe('the database goes away and comes back', () => {
  let pg: PrivatePostgres;
  let db: TestDatabase;
  let a: TestApp;
  beforeAll(async () => {
    pg = await startPrivatePostgres();
    const sql = createSql(pg.url, { max: 4, connectTimeoutMs: 1_000 });
    db = {
      url: pg.url,
      sql,
      drop: async () => {
        await sql.end({ timeout: 1 });
      },
    };
    a = await createTestApp({ env: 'prod', database: db, deadlineMs: 1_000 });
  });
  afterAll(async () => {
    await a?.close();
    await db?.drop();
    await pg?.dispose();
  });

  it('503 + Retry-After on approval routes, /decide still decides, approval_id is never allowed; then recovery', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub, bigRefund(), a);
    expect((await grant(approval.id, approverToken(), {}, a)).statusCode).toBe(200);
    const spare = (await requestApproval(sub, bigRefund(), a)).approval;

    await pg.stop();
    try {
      const calls: [string, () => Promise<LightMyRequestResponse>][] = [
        ['POST /approvals', () => post(a.app, '/approvals', bigRefund(), agent(sub))],
        ['GET /approvals', () => get(a, '/approvals', agent(sub))],
        ['GET /approvals/:id', () => get(a, `/approvals/${approval.id}`, agent(sub))],
        ['GET /approvals/:id?wait=2', () => get(a, `/approvals/${spare.id}?wait=2`, agent(sub))],
        ['grant', () => grant(spare.id, approverToken(), {}, a)],
        ['deny', () => deny(spare.id, approverToken(), {}, a)],
        ['/decide with approval_id', () => post(a.app, '/decide', { ...body, approval_id: approval.id }, agent(sub))],
      ];
      for (const [name, call] of calls) {
        const res = await call();
        expect(res.statusCode, `${name}: ${res.body}`).toBe(503);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.headers['retry-after'], name).toMatch(/^\d+$/);
        expect(res.body).not.toContain('"allow"');
      }
      // Decisions without an approval do not need the database.
      const plain = await post(a.app, '/decide', { tool: 'refund', args: { order: 'A1', amount: 40 } }, agent(sub));
      expect(plain.statusCode).toBe(200);
      expect((await post(a.app, '/decide', body, agent(sub))).json()).toMatchObject({ decision: 'require_approval' });
      const ready = await a.app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toMatchObject({ status: 'not_ready', database: 'unavailable' });
      expect((await a.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await pg.start();
    }

    // Same app, same pools: ready again within a bounded number of tries.
    let readyAgain = false;
    for (let i = 0; i < 40 && !readyAgain; i++) {
      readyAgain = (await a.app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200;
      if (!readyAgain) await new Promise((r) => setTimeout(r, 250));
    }
    expect(readyAgain).toBe(true);
    const retry = async (fn: () => Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse> => {
      for (let i = 0; i < 20; i++) {
        const res = await fn();
        if (res.statusCode !== 503) return res;
        await new Promise((r) => setTimeout(r, 250));
      }
      return fn();
    };
    expect((await retry(() => get(a, `/approvals/${approval.id}`, agent(sub)))).json()).toMatchObject({
      status: 'granted',
    });
    expect((await retry(() => grant(spare.id, approverToken(), {}, a))).statusCode).toBe(200);
    const redeemed = await retry(() => post(a.app, '/decide', { ...body, approval_id: approval.id }, agent(sub)));
    expect(redeemed.statusCode).toBe(200);
    expect(redeemed.json()).toMatchObject({ decision: 'allow', approval: { id: approval.id, status: 'consumed' } });
    expect((await retry(() => post(a.app, '/approvals', bigRefund(), agent(sub)))).statusCode).toBe(201);
  });
});

describe('token edge cases on approval routes', () => {
  // A validly signed token whose sub holds U+0000 used to pass authentication, then fail
  // as a 500 (/decide with approval_id) or as errors blaming the body, note or cursor.
  it('a sub or approver sub with U+0000 is 401 on every approval route, naming the claim', async () => {
    const { approval, body } = await requestApproval(newSub());
    const nulAgent = token({ sub: 'a\u0000b', team: 'support', agent: 'bot' });
    const nulApprover = token({ sub: 'op\u0000x', team: 'ops', roles: ['approver'] });
    const calls: [string, () => Promise<LightMyRequestResponse>][] = [
      ['POST /approvals', () => post(t.app, '/approvals', bigRefund(), nulAgent)],
      ['/decide with approval_id', () => post(t.app, '/decide', { ...body, approval_id: approval.id }, nulAgent)],
      ['GET /approvals', () => get(t, '/approvals', nulAgent)],
      ['GET /approvals/:id', () => get(t, `/approvals/${approval.id}`, nulApprover)],
      ['grant', () => grant(approval.id, nulApprover)],
      ['deny', () => deny(approval.id, nulApprover)],
    ];
    for (const [name, call] of calls) {
      const res = await call();
      const problem = expectProblem(res, 401);
      expect(problem.detail, name).toBe('the claim "sub" contains a control character');
    }
    expect(await statusOf(approval.id)).toBe('pending');
  });

  it("should the store still refuse an identity, it is the token's 401, never a 500 or a body error", async () => {
    // Unreachable through authentication (the test above); the routes' safety net, forced here.
    const { approval, body } = await requestApproval(newSub());
    const approvals = t.ctx.approvals!;
    const spies = [
      vi.spyOn(approvals, 'redeem').mockRejectedValue(new ApprovalInputError('requester.sub', 'contains U+0000')),
      vi
        .spyOn(approvals.store, 'create')
        .mockRejectedValue(new ApprovalInputError('requester.team', 'contains U+0000')),
      vi.spyOn(approvals.store, 'grant').mockRejectedValue(new ApprovalInputError('approver.sub', 'contains U+0000')),
      vi
        .spyOn(approvals.store, 'list')
        .mockRejectedValue(
          new ListQueryError('invalid_filter', 'requesterSub', 'requesterSub is not a possible value'),
        ),
    ];
    try {
      for (const res of [
        await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(newSub())),
        await post(t.app, '/approvals', bigRefund(), agent(newSub())),
        await grant(approval.id),
        await get(t, '/approvals', agent(newSub())),
      ]) {
        expect(expectProblem(res, 401).detail).toBe("the token's identity claims cannot be used");
      }
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it('an expired approver token cannot grant (401)', async () => {
    const { approval } = await requestApproval(newSub());
    const now = Math.floor(Date.now() / 1000);
    const expired = signJwt({ sub: 'op-late', roles: ['approver'], iat: now - 7200, exp: now - 3600 });
    expectProblem(await grant(approval.id, expired), 401);
    expect(await statusOf(approval.id)).toBe('pending');
  });
});

describe('what to do next, withdrawing, and the run', () => {
  const nextOf = async (body: Record<string, unknown>, sub: string): Promise<Record<string, unknown>> => {
    const res = await post(t.app, '/decide', body, agent(sub));
    expect(res.statusCode).toBe(403);
    return (res.json() as { next: Record<string, unknown> }).next;
  };

  it('every require_approval says what to do next: file, wait, or file a new one', async () => {
    const sub = newSub();
    const body = bigRefund();
    expect(await nextOf(body, sub)).toEqual({ action: 'file', url: '/approvals' });
    const { approval } = await requestApproval(sub, body);
    expect(await nextOf({ ...body, approval_id: approval.id }, sub)).toEqual({
      action: 'wait',
      url: `/approvals/${approval.id}?wait=60`,
      expires_at: approval.expires_at,
    });
    // Someone else's, or an unknown id: as if none was cited.
    expect(await nextOf({ ...body, approval_id: approval.id }, newSub())).toEqual({
      action: 'file',
      url: '/approvals',
    });
    expect(await nextOf({ ...body, approval_id: randomUUID() }, sub)).toEqual({ action: 'file', url: '/approvals' });
    // Another request: the cited approval can never redeem it.
    expect(await nextOf({ ...body, args: { ...body.args, amount: 130 }, approval_id: approval.id }, sub)).toEqual({
      action: 'file_new',
      url: '/approvals',
    });
    // Spent: consumed.
    expect((await grant(approval.id)).statusCode).toBe(200);
    expect((await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub))).statusCode).toBe(200);
    expect(await nextOf({ ...body, approval_id: approval.id }, sub)).toEqual({ action: 'file_new', url: '/approvals' });
    // Allow, deny and abort carry no next.
    const allowed = await post(t.app, '/decide', { tool: 'lookup_order', args: { order: 'A1' } }, agent(sub));
    expect(allowed.json()).not.toHaveProperty('next');
    const aborted = await post(t.app, '/decide', { tool: 'wipe_orders' }, agent(sub));
    expect(aborted.json()).not.toHaveProperty('next');
  });

  it('the requester withdraws a pending approval: cancelled, out of the queue and of the cap, never granted or redeemed', async () => {
    const capped = await createTestApp({ env: 'prod', database: t.db!, maxPendingApprovals: 1 });
    try {
      const sub = newSub();
      const first = (await post(capped.app, '/approvals', bigRefund(), agent(sub))).json() as ApprovalBody;
      expect((await post(capped.app, '/approvals', bigRefund(), agent(sub))).statusCode).toBe(429);
      // A long-poll on it is answered by the withdrawal.
      const waiting = capped.app.inject({
        method: 'GET',
        url: `/approvals/${first.id}?wait=30`,
        headers: bearer(agent(sub)),
      });
      for (let i = 0; i < 500 && capped.ctx.approvals!.waiter.size === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      // No body at all: cancel takes none.
      const cancelled = await capped.app.inject({
        method: 'POST',
        url: `/approvals/${first.id}/cancel`,
        headers: bearer(agent(sub)),
      });
      expect(cancelled.statusCode).toBe(200);
      expect(cancelled.json()).toMatchObject({ id: first.id, status: 'cancelled', decided_by: null });
      expect(((await waiting).json() as ApprovalBody).status).toBe('cancelled');
      // Not counted against the cap any more, and gone from the operators' pending queue.
      const second = await post(capped.app, '/approvals', bigRefund(), agent(sub));
      expect(second.statusCode).toBe(201);
      const queue = (await get(capped, '/approvals?status=pending&limit=200', approverToken())).json() as {
        items: { id: string }[];
      };
      expect(queue.items.map((i) => i.id)).not.toContain(first.id);
      const listed = (await get(capped, '/approvals?status=cancelled&limit=200', approverToken())).json() as {
        items: { id: string }[];
      };
      expect(listed.items.map((i) => i.id)).toContain(first.id);
      // Final: no grant, no second cancel, and the event log says who and from what.
      expect((await grant(first.id, approverToken(), { note: 'ok' }, capped)).statusCode).toBe(409);
      expect((await post(capped.app, `/approvals/${first.id}/cancel`, {}, agent(sub))).statusCode).toBe(409);
      const events = await t.db!.sql<{ from_status: string | null; to_status: string; actor: string }[]>`
        select from_status, to_status, actor from approval_events where approval_id = ${first.id} order by id`;
      expect(events).toEqual([
        { from_status: null, to_status: 'pending', actor: sub },
        { from_status: 'pending', to_status: 'cancelled', actor: sub },
      ]);
    } finally {
      await capped.close();
    }
  });

  it('a granted approval can be withdrawn before it is redeemed; then citing it says a new one is needed', async () => {
    const sub = newSub();
    const { approval, body } = await requestApproval(sub);
    expect((await grant(approval.id)).statusCode).toBe(200);
    expect((await post(t.app, `/approvals/${approval.id}/cancel`, {}, agent(sub))).json()).toMatchObject({
      status: 'cancelled',
      decided_by: 'operator-1',
    });
    const res = await post(t.app, '/decide', { ...body, approval_id: approval.id }, agent(sub));
    expect(res.statusCode).toBe(403);
    const d = res.json() as DecisionBody & { next: unknown };
    expect(d).toMatchObject({ decision: 'require_approval', approval: { id: approval.id, status: 'cancelled' } });
    expect(d.message).toMatch(/was withdrawn and cannot be used again: a new approval is needed/);
    expect(d.next).toEqual({ action: 'file_new', url: '/approvals' });
  });

  it('cancel races deny and redeem: exactly one move wins', async () => {
    for (let round = 0; round < 5; round++) {
      const sub = newSub();
      const pending = await requestApproval(sub);
      const [c, d] = await Promise.all([
        post(t.app, `/approvals/${pending.approval.id}/cancel`, {}, agent(sub)),
        deny(pending.approval.id),
      ]);
      expect([c.statusCode, d.statusCode].sort()).toEqual([200, 409]);
      expect(await statusOf(pending.approval.id)).toBe(c.statusCode === 200 ? 'cancelled' : 'denied');

      const granted = await requestApproval(sub);
      expect((await grant(granted.approval.id)).statusCode).toBe(200);
      const [c2, r] = await Promise.all([
        post(t.app, `/approvals/${granted.approval.id}/cancel`, {}, agent(sub)),
        post(t.app, '/decide', { ...granted.body, approval_id: granted.approval.id }, agent(sub)),
      ]);
      // Either the tool may run once (redeemed) or never (withdrawn): never both.
      expect([c2.statusCode, r.statusCode].sort()).toEqual(c2.statusCode === 200 ? [200, 403] : [200, 409]);
      expect(await statusOf(granted.approval.id)).toBe(c2.statusCode === 200 ? 'cancelled' : 'consumed');
    }
  });

  it('only the requester can withdraw; to anyone else, approvers included, it does not exist', async () => {
    const sub = newSub();
    const { approval } = await requestApproval(sub);
    expect((await post(t.app, `/approvals/${approval.id}/cancel`, {}, agent(newSub()))).statusCode).toBe(404);
    expect((await post(t.app, `/approvals/${approval.id}/cancel`, {}, approverToken())).statusCode).toBe(404);
    expect(await statusOf(approval.id)).toBe('pending');
  });

  it('the run id is stored on the approval, shown in lists, and written on the decision log line', async () => {
    const logs: Record<string, unknown>[] = [];
    const logged = await createTestApp({ env: 'prod', database: t.db!, logs });
    try {
      const sub = newSub();
      const body = { ...bigRefund(), run: { id: 'run-42', steps: [] } };
      const created = (await post(logged.app, '/approvals', body, agent(sub))).json() as ApprovalBody & {
        run_id: string | null;
      };
      expect(created.run_id).toBe('run-42');
      const listed = (await get(logged, '/approvals?limit=200', agent(sub))).json() as {
        items: { id: string; run_id: string | null }[];
      };
      expect(listed.items.find((i) => i.id === created.id)?.run_id).toBe('run-42');
      await post(logged.app, '/decide', body, agent(sub));
      expect(logs.find((l) => l.msg === 'decision')).toMatchObject({ run_id: 'run-42', user: sub });
      expect(logs.find((l) => l.msg === 'approval requested')).toMatchObject({
        run_id: 'run-42',
        approval_id: created.id,
      });
      // Without a run, null.
      const plain = (await post(logged.app, '/approvals', bigRefund(), agent(sub))).json() as { run_id: string | null };
      expect(plain.run_id).toBeNull();
    } finally {
      await logged.close();
    }
  });
});
