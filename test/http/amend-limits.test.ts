// Amend and grant for calls that budgets and rate limits select (docs/spec.md section 5.4), over HTTP
// against a real PostgreSQL: the amended call is settled against the counters as they stand, read and
// never counted by the grant; a grant past a limit is bound to the amended call's hash and counted
// once, past the limit, when redeemed; a limit or rule that denies the amended call refuses it (422);
// the arguments as filed answer 403 use_amended.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, post, token, type TestApp } from '../helpers/app.js';

const DIR = 'test/fixtures/policies/amend-limits';

// biome-ignore lint/suspicious/noExplicitAny: decision and approval bodies, read freely after their status is checked
type Body = any;

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ policyDir: DIR, env: null, database: true });
}, 60_000);
afterAll(async () => t?.close());

const unique = (label: string): string => `${label}-${randomUUID().slice(0, 8)}`;
const agent = (sub: string): string => token({ sub, team: 'support', agent: 'bot' });
const operator = (): string => token({ sub: unique('op'), team: 'ops', roles: ['approver'] });

const decide = (sub: string, body: Record<string, unknown>, approvalId?: string) =>
  post(t.app, '/decide', { ...body, ...(approvalId !== undefined ? { approval_id: approvalId } : {}) }, agent(sub));
const grant = (id: string, body: Record<string, unknown>) => post(t.app, `/approvals/${id}/grant`, body, operator());
const read = async (id: string): Promise<Body> => {
  const res = await t.app.inject({ method: 'GET', url: `/approvals/${id}`, headers: bearer(operator()) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};

/** Files the call as its requester would after a require_approval. */
async function file(sub: string, body: Record<string, unknown>): Promise<Body> {
  const res = await post(t.app, '/approvals', body, agent(sub));
  expect(res.statusCode, res.body).toBe(201);
  return res.json();
}

/** The caller's counter of one budget as GET /budgets shows it; 0 without one. */
async function counted(sub: string, id: string, run?: string): Promise<number> {
  const res = await t.app.inject({ method: 'GET', url: '/budgets', headers: bearer(agent(sub)) });
  expect(res.statusCode, res.body).toBe(200);
  const limit = (res.json() as Body).limits.find((l: Body) => l.id === id);
  expect(limit, `limit ${id} in ${res.body}`).toBeDefined();
  const counter = limit.counters.find((c: Body) => run === undefined || c.for.run === run);
  return counter === undefined ? 0 : counter.counted;
}

const refund = (amount: number, order: string) => ({ tool: 'refund', args: { order, amount } });

/** A refund the budget asks an operator for: 800 of the day's 1,000 spent, then 500 filed. */
async function overBudget(): Promise<{ sub: string; order: string; filed: Body }> {
  const sub = unique('agent');
  const order = unique('O');
  expect((await decide(sub, refund(800, unique('O')))).statusCode).toBe(200);
  const asked = await decide(sub, refund(500, order));
  expect(asked.json()).toMatchObject({ decision: 'require_approval', rule: 'refunds-per-user' });
  const filed = await file(sub, refund(500, order));
  expect(filed.requirements).toEqual([expect.objectContaining({ rule: 'refunds-per-user', kind: 'budget' })]);
  return { sub, order, filed };
}

describe('amend and grant, a call a budget asks an operator for', () => {
  it('amended to a lower amount still over the room: granted, counted nothing, then redeemed and counted once past the budget', async () => {
    const { sub, order, filed } = await overBudget();
    expect(await counted(sub, 'refunds-per-user')).toBe(800);
    const res = await grant(filed.id, { note: 'part of it', args: { order, amount: 300 } });
    expect(res.statusCode, res.body).toBe(200);
    const granted = res.json() as Body;
    expect(granted).toMatchObject({
      status: 'granted',
      args: { order, amount: 500 },
      amended_args: { order, amount: 300 },
      hash: filed.hash,
    });
    // 800 + 300 still crosses 1,000: the amended call's own budget requirement, for its amount.
    expect(granted.requirements).toEqual([
      expect.objectContaining({
        rule: 'refunds-per-user',
        kind: 'budget',
        presentation: expect.objectContaining({ amount: 300, budget: 'refunds-per-user' }),
        standing: expect.objectContaining({ counted: 800 }),
      }),
    ]);
    expect(await counted(sub, 'refunds-per-user')).toBe(800);

    // The call as filed: 403, the amended arguments in `next`; nothing counted, still granted.
    const original = await decide(sub, refund(500, order), filed.id);
    expect(original.statusCode).toBe(403);
    expect(original.json()).toMatchObject({
      decision: 'deny',
      next: { action: 'use_amended', approval_id: filed.id, args: { order, amount: 300 } },
    });
    expect((await read(filed.id)).status).toBe('granted');
    expect(await counted(sub, 'refunds-per-user')).toBe(800);

    const redeemed = await decide(sub, refund(300, order), filed.id);
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    expect(redeemed.json()).toMatchObject({ decision: 'allow', approval: { id: filed.id, status: 'consumed' } });
    expect(await counted(sub, 'refunds-per-user')).toBe(1100);
    // Consumed: a second redeem neither runs nor counts.
    expect((await decide(sub, refund(300, order), filed.id)).statusCode).toBe(403);
    expect(await counted(sub, 'refunds-per-user')).toBe(1100);
  });

  it('a redeem of the amended call retried under its Idempotency-Key is answered again, counted once', async () => {
    const { sub, order, filed } = await overBudget();
    expect((await grant(filed.id, { args: { order, amount: 300 } })).statusCode).toBe(200);
    const keyed = () =>
      t.app.inject({
        method: 'POST',
        url: '/decide',
        headers: { ...bearer(agent(sub)), 'content-type': 'application/json', 'idempotency-key': `k-${filed.id}` },
        payload: JSON.stringify({ ...refund(300, order), approval_id: filed.id }),
      });
    const first = await keyed();
    expect(first.statusCode, first.body).toBe(200);
    const again = await keyed();
    expect(again.statusCode, again.body).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toMatchObject({ decision: 'allow', decision_id: first.json().decision_id });
    expect(await counted(sub, 'refunds-per-user')).toBe(1100);
  });

  it('amended to an amount a deny rule refuses: 422 amendment_refused with the decision; nothing changes', async () => {
    const { sub, order, filed } = await overBudget();
    const res = await grant(filed.id, { args: { order, amount: 20000 } });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json()).toMatchObject({
      code: 'amendment_refused',
      decision: { decision: 'deny', rule: 'refund-cap' },
    });
    expect(res.body).not.toContain('20000');
    expect(await read(filed.id)).toMatchObject({ status: 'pending', amended_args: null, grants: [] });
    expect(await counted(sub, 'refunds-per-user')).toBe(800);
  });

  it('amended to an amount that fits in the room: granted under the filed requirement; the redeem counts it', async () => {
    const { sub, order, filed } = await overBudget();
    const res = await grant(filed.id, { args: { order, amount: 150 } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'granted',
      amended_args: { order, amount: 150 },
      requirements: [expect.objectContaining({ rule: 'refunds-per-user', kind: 'budget' })],
    });
    expect(await counted(sub, 'refunds-per-user')).toBe(800);
    expect((await decide(sub, refund(500, order), filed.id)).json()).toMatchObject({
      decision: 'deny',
      next: { action: 'use_amended' },
    });
    const redeemed = await decide(sub, refund(150, order), filed.id);
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    expect(redeemed.json()).toMatchObject({ decision: 'allow', approval: { id: filed.id, status: 'consumed' } });
    expect(await counted(sub, 'refunds-per-user')).toBe(950);
    expect((await read(filed.id)).status).toBe('consumed');
  });
});

describe('amend and grant, the counters moving between the grant and the redeem', () => {
  it('granted within the room, then the room spent by another call: the redeem asks again, counting nothing', async () => {
    const { sub, order, filed } = await overBudget();
    expect((await grant(filed.id, { args: { order, amount: 150 } })).statusCode).toBe(200);
    expect((await decide(sub, refund(100, unique('O')))).statusCode).toBe(200);
    expect(await counted(sub, 'refunds-per-user')).toBe(900);
    // 900 + 150 crosses 1,000 now: another call than the one granted (another requirement), not redeemed.
    const late = await decide(sub, refund(150, order), filed.id);
    expect(late.statusCode).toBe(403);
    expect(late.json()).toMatchObject({ decision: 'require_approval', rule: 'refunds-per-user' });
    expect(await counted(sub, 'refunds-per-user')).toBe(900);
    expect((await read(filed.id)).status).toBe('granted');
  });

  it('granted over the room, the room freed before the redeem: allowed within it, the grant consumed', async () => {
    const { sub, order, filed } = await overBudget();
    expect((await grant(filed.id, { args: { order, amount: 400 } })).statusCode).toBe(200);
    // The counter is moved back by hand, as a new window would: the amended call fits now.
    await t.db!
      .sql`update budget_counters set counted = 0 where budget = 'refunds-per-user' and scope_key = ${`user:${sub}`}`;
    const redeemed = await decide(sub, refund(400, order), filed.id);
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    expect(redeemed.json()).toMatchObject({ decision: 'allow', approval: { id: filed.id, status: 'consumed' } });
    expect(await counted(sub, 'refunds-per-user')).toBe(400);
  });
});

describe('amend and grant, a call a rule asks for that a budget counts', () => {
  const payout = (amount: number, run: string) => ({
    tool: 'payout',
    args: { to: 'acct-1', amount },
    run: { id: run },
  });

  it('the run’s counter is read (never counted) for the amended call; the redeem counts it', async () => {
    const sub = unique('agent');
    const run = unique('run');
    expect((await decide(sub, payout(400, run))).json()).toMatchObject({
      decision: 'require_approval',
      rule: 'payouts',
    });
    const filed = await file(sub, payout(400, run));
    // 600 crosses the run's 500: the budget denies it.
    const over = await grant(filed.id, { args: { to: 'acct-1', amount: 600 } });
    expect(over.statusCode, over.body).toBe(422);
    expect(over.json()).toMatchObject({
      code: 'amendment_refused',
      decision: { decision: 'deny', rule: 'payouts-per-run' },
    });
    expect((await read(filed.id)).status).toBe('pending');

    const res = await grant(filed.id, { args: { to: 'acct-1', amount: 300 } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'granted',
      amended_args: { to: 'acct-1', amount: 300 },
      requirements: [expect.objectContaining({ rule: 'payouts', kind: 'confirm' })],
    });
    expect(await counted(sub, 'payouts-per-run', run)).toBe(0);
    expect((await decide(sub, payout(400, run), filed.id)).json()).toMatchObject({
      decision: 'deny',
      next: { action: 'use_amended' },
    });
    const redeemed = await decide(sub, payout(300, run), filed.id);
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    expect(redeemed.json()).toMatchObject({ decision: 'allow', approval: { id: filed.id, status: 'consumed' } });
    expect(await counted(sub, 'payouts-per-run', run)).toBe(300);
  });
});

describe('amend and grant, a call a rate limit asks an operator for', () => {
  it('granted past the rate, counted once when redeemed, never by the grant', async () => {
    const sub = unique('agent');
    const email = (to: string[]) => ({ tool: 'send_email', args: { to } });
    for (let i = 0; i < 2; i++) expect((await decide(sub, email(['a@example.com']))).statusCode).toBe(200);
    expect((await decide(sub, email(['a@example.com', 'b@example.com']))).json()).toMatchObject({
      decision: 'require_approval',
      rule: 'email-rate',
    });
    const filed = await file(sub, email(['a@example.com', 'b@example.com']));
    // The calls a rate limit keeps: the times of the last `calls` allowed.
    const times = async (): Promise<string[]> => {
      const rows = await t.db!.sql<{ times: string }[]>`
        select array_to_json(times)::text as times
          from rate_limit_calls where rate_limit = 'email-rate' and scope_key = ${`user:${sub}`}`;
      return rows[0] === undefined ? [] : (JSON.parse(rows[0].times) as string[]);
    };
    const before = await times();
    expect(before).toHaveLength(2);
    const res = await grant(filed.id, { note: 'one recipient', args: { to: ['a@example.com'] } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'granted',
      amended_args: { to: ['a@example.com'] },
      requirements: [expect.objectContaining({ rule: 'email-rate', kind: 'rate_limit' })],
    });
    expect(await times()).toEqual(before);
    const redeemed = await decide(sub, email(['a@example.com']), filed.id);
    expect(redeemed.statusCode, redeemed.body).toBe(200);
    // Counted once, past the rate: one time more, the oldest dropped.
    const after = await times();
    expect(after).toHaveLength(2);
    expect(after[0]).toBe(before[1]);
    expect(after[1]! > before[1]!).toBe(true);
  });
});
