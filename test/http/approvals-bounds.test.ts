// What one caller can make an approval cost, and what an approval carries: its stored size is bounded
// (APPROVAL_MAX_BYTES) and its arguments stored once; lists carry summaries; a denied request cannot be
// put back in front of the operators at once (DENIED_COOLDOWN); long-polls are capped per caller
// (MAX_WAITS_PER_CALLER) and per replica (MAX_WAITS); and an approval asked for by several policy files
// carries, shows and hashes every requirement. Against a real PostgreSQL.
import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approverToken, bearer, createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

const ONE = 'test/fixtures/policies/one-asker';
const TWO = 'test/fixtures/policies/two-askers';
const MAX_BYTES = 4096;

let db: TestDatabase;
let t: TestApp;
beforeAll(async () => {
  db = await createTestDatabase();
  t = await createTestApp({
    policyDir: ONE,
    env: null,
    database: db,
    approvalMaxBytes: MAX_BYTES,
    deniedCooldownMs: 600_000,
    maxWaitsPerCaller: 3,
    maxWaits: 5,
  });
});
afterAll(async () => {
  await t.close();
  await db.drop();
});

let seq = 0;
const newSub = (): string => `agent-${++seq}-${randomUUID().slice(0, 8)}`;
const agent = (sub: string): string => token({ sub, team: 'support', agent: 'bot' });
const refund = (extra: Record<string, unknown> = {}) => ({
  tool: 'refund',
  args: { order: `O-${++seq}`, amount: 120, ...extra },
});
const get = (app: TestApp, url: string, tok: string) => app.app.inject({ method: 'GET', url, headers: bearer(tok) });

function expectProblem(res: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({ status, code });
  return body;
}

async function file(sub: string, body: unknown, app = t): Promise<{ id: string; hash: string }> {
  const res = await post(app.app, '/approvals', body, agent(sub));
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; hash: string };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

describe('APPROVAL_MAX_BYTES: the arguments an approval may hold', () => {
  it('larger canonical arguments are 413 problem+json naming the limit, and nothing is stored', async () => {
    const sub = newSub();
    const res = await post(t.app, '/approvals', refund({ blob: 'x'.repeat(MAX_BYTES) }), agent(sub));
    const problem = expectProblem(res, 413, 'approval_too_large');
    expect(problem.detail).toContain('APPROVAL_MAX_BYTES');
    expect(problem.limit).toBe(MAX_BYTES);
    expect(res.body).not.toContain('xxxx');
    const rows = await db.sql`select id from approvals where requester_sub = ${sub}`;
    expect(rows).toHaveLength(0);
  });

  it('at the limit it is stored', async () => {
    const sub = newSub();
    const base = refund({ blob: '' });
    const overhead = JSON.stringify(base.args).length; // ASCII, and canonical order is the same length
    await file(sub, refund({ blob: 'y'.repeat(MAX_BYTES - overhead) }));
  });
});

describe('arguments are stored once', () => {
  it('a default shape ({tool, args}) is not copied: the row holds the arguments once', async () => {
    const sub = newSub();
    // The risk file's requirement has the default shape; its capability and presentation are {tool, args}.
    const two = await createTestApp({ policyDir: TWO, env: null, database: db });
    try {
      const blob = 'z'.repeat(3000);
      const { id } = await file(sub, refund({ blob }), two);
      const [row] = await db.sql<
        { args: number; capability: number | null; presentation: number | null; requirements: number }[]
      >`
        select octet_length(args) as args, octet_length(capability) as capability, octet_length(presentation) as presentation,
               octet_length(requirements) as requirements
          from approvals where id = ${id}`;
      expect(row).toMatchObject({ capability: null, presentation: null });
      expect(row!.args).toBeGreaterThan(3000);
      expect(row!.requirements).toBeLessThan(600); // names, reasons and the small picked shape: never the blob
      // Read back whole, the default shape is {tool, args} again, and re-hashes (a grant redeems).
      const whole = (await get(two, `/approvals/${id}`, agent(sub))).json() as {
        requirements: { capability: unknown }[];
        args: unknown;
      };
      expect(whole.requirements[1]?.capability).toEqual({ tool: 'refund', args: whole.args });
    } finally {
      await two.close();
    }
  });
});

describe('lists carry summaries', () => {
  it('a page of approvals with large arguments costs what their summaries cost', async () => {
    const sub = newSub();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await file(sub, refund({ blob: 'w'.repeat(3500) }))).id);
    const res = await get(t, '/approvals?limit=50', agent(sub));
    expect(res.statusCode).toBe(200);
    const page = res.json() as { items: Record<string, unknown>[] };
    expect(page.items.map((a) => a.id)).toEqual([...ids].reverse());
    // 20 × 3.5 KB of arguments; each summary is well under 1 KB.
    expect(res.body.length).toBeLessThan(20 * 1024);
    expect(res.body).not.toContain('www');
    for (const item of page.items) {
      expect(Object.keys(item).sort()).toEqual([
        'amended_at',
        'amended_by',
        'args_bytes',
        'consumed_at',
        'created_at',
        'decided_at',
        'decided_by',
        'decision_message',
        'decision_note',
        'expires_at',
        'hash',
        'id',
        'kind',
        'reason',
        'requester',
        'rule',
        'run_id',
        'status',
        'tool',
      ]);
      expect(item.args_bytes).toBeGreaterThan(3500);
    }
    // The whole approval, arguments included, comes from GET /approvals/{id}.
    const whole = (await get(t, `/approvals/${ids[0]}`, agent(sub))).json() as { args: { blob: string } };
    expect(whole.args.blob).toHaveLength(3500);
  });
});

describe('DENIED_COOLDOWN: a denied request cannot be filed again at once', () => {
  it('the same request by the same caller is 409 with the denial and Retry-After; others are not held back', async () => {
    const sub = newSub();
    const body = refund();
    const { id } = await file(sub, body);
    const denial = { note: 'looks like fraud', message: 'This refund was declined.' };
    expect((await post(t.app, `/approvals/${id}/deny`, denial, approverToken())).statusCode).toBe(200);
    const again = await post(t.app, '/approvals', body, agent(sub));
    const problem = expectProblem(again, 409, 'recently_denied');
    // The requester is told the message for the agent, never the operators' note.
    expect(problem.approval).toMatchObject({
      id,
      status: 'denied',
      decided_by: 'operator-1',
      decision_note: null,
      decision_message: denial.message,
    });
    expect(problem.approval).not.toHaveProperty('args');
    const retryAfter = Number(again.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(590);
    expect(retryAfter).toBeLessThanOrEqual(600);
    const rows = await db.sql`select id from approvals where requester_sub = ${sub}`;
    expect(rows).toHaveLength(1);
    // Another caller's same request, and this caller's different request, go through.
    await file(newSub(), body);
    await file(sub, refund());
  });

  it('after the cooldown the same request can be filed again', async () => {
    const sub = newSub();
    const body = refund();
    const { id } = await file(sub, body);
    await post(t.app, `/approvals/${id}/deny`, { reason: 'no' }, approverToken());
    // The decision is final (a trigger keeps decided_at): the cooldown is moved instead, by a store
    // whose cooldown ends before now.
    const short = await createTestApp({ policyDir: ONE, env: null, database: db, deniedCooldownMs: 1 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const again = await file(sub, body, short);
      expect(again.id).not.toBe(id);
    } finally {
      await short.close();
    }
  });
});

describe('long-polls are capped', () => {
  it(`past MAX_WAITS_PER_CALLER a wait is 429 with Retry-After; past MAX_WAITS, 503; a finished wait gives its place back`, async () => {
    const alice = newSub();
    const bob = newSub();
    const a = await file(alice, refund());
    const b = await file(bob, refund());
    const waiter = t.ctx.approvals!.waiter;
    const held = [0, 1, 2].map(() => get(t, `/approvals/${a.id}?wait=30`, agent(alice)));
    await until(() => waiter.size === 3);
    const refused = await get(t, `/approvals/${a.id}?wait=30`, agent(alice));
    expectProblem(refused, 429, 'too_many_waits');
    expect(refused.headers['retry-after']).toBeDefined();
    // Without `wait` the same caller still reads it.
    expect((await get(t, `/approvals/${a.id}`, agent(alice))).statusCode).toBe(200);
    const bobs = [0, 1].map(() => get(t, `/approvals/${b.id}?wait=30`, agent(bob)));
    await until(() => waiter.size === 5);
    const full = await get(t, `/approvals/${b.id}?wait=30`, agent(bob));
    expectProblem(full, 503, 'unavailable');
    expect(full.headers['retry-after']).toBeDefined();
    // A grant answers alice's three waits at once (one read), and frees their places.
    expect((await post(t.app, `/approvals/${a.id}/grant`, {}, approverToken())).statusCode).toBe(200);
    const answers = await Promise.all(held);
    expect(answers.map((r) => (r.json() as { status: string }).status)).toEqual(['granted', 'granted', 'granted']);
    expect(waiter.size).toBe(2);
    expect((await post(t.app, `/approvals/${b.id}/deny`, {}, approverToken())).statusCode).toBe(200);
    await Promise.all(bobs);
    expect(waiter.size).toBe(0);
  });
});

describe('several files asking for one approval', () => {
  let two: TestApp;
  beforeAll(async () => {
    two = await createTestApp({ policyDir: TWO, env: null, database: db });
  });
  afterAll(async () => two.close());

  it('the approval carries every requirement in load order, each with its own words', async () => {
    const sub = newSub();
    const body = refund();
    const decided = await post(two.app, '/decide', body, agent(sub));
    expect(decided.statusCode).toBe(403);
    const decision = decided.json() as { reason: string; approval: { hash: string; requirements: unknown[] } };
    expect(decision.reason).toBe('refund over 100 needs an operator');
    const requirements = [
      {
        policy: 'payments',
        rule: 'refund-cap',
        kind: 'refund_over_cap',
        reason: 'refund over 100 needs an operator',
        capability: { order: body.args.order, amount: 120 },
        presentation: { order: body.args.order, amount: 120 },
      },
      {
        policy: 'risk',
        rule: 'risk-review',
        kind: 'confirm',
        reason: 'the risk team reviews refunds over 50',
        capability: { tool: 'refund', args: body.args },
        presentation: { tool: 'refund', args: body.args },
      },
    ];
    expect(decision.approval.requirements).toEqual(requirements);
    const { id, hash } = await file(sub, body, two);
    expect(hash).toBe(decision.approval.hash);
    expect((await get(two, `/approvals/${id}`, approverToken())).json()).toMatchObject({
      requirements,
      kind: 'refund_over_cap',
      rule: 'refund-cap',
    });
    // Granted and redeemed as one.
    expect((await post(two.app, `/approvals/${id}/grant`, {}, approverToken())).statusCode).toBe(200);
    const redeemed = await post(two.app, '/decide', { ...body, approval_id: id }, agent(sub));
    expect(redeemed.statusCode, redeemed.body).toBe(200);
  });

  it('a grant of what one file asked does not satisfy a second file that now asks too', async () => {
    const sub = newSub();
    const body = refund();
    const { id } = await file(sub, body); // one-asker policies: one requirement
    expect((await post(t.app, `/approvals/${id}/grant`, {}, approverToken())).statusCode).toBe(200);
    // The same request decided where a second file asks: another hash, nothing consumed.
    const res = await post(two.app, '/decide', { ...body, approval_id: id }, agent(sub));
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ decision: 'require_approval' });
    expect(((await get(t, `/approvals/${id}`, approverToken())).json() as { status: string }).status).toBe('granted');
  });
});
