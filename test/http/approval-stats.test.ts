// GET /approvals/stats against a real PostgreSQL: per rule and kind, filed, granted, denied, expired,
// cancelled, time to decide and fast grants, counted from approvals filed, granted and denied over
// the API; a rule always granted is pointed out; who may read it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  adminToken,
  agentToken,
  approverToken,
  bearer,
  createTestApp,
  post,
  token,
  type TestApp,
} from '../helpers/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: 'prod', database: true });
});
afterAll(async () => t.close());

interface Stats {
  since: string;
  fast_grant_seconds: number;
  rules: Record<string, unknown>[];
}

const run = randomUUID().slice(0, 8);
let n = 0;
const agent = (): string => token({ sub: `agent-${run}-${++n}`, team: 'support', agent: 'bot' });

async function file(body: unknown): Promise<string> {
  const res = await post(t.app, '/approvals', body, agent());
  expect(res.statusCode, res.body).toBe(201);
  return (res.json() as { id: string }).id;
}
const refund = () => ({ tool: 'refund', args: { order: `O-${run}-${++n}`, amount: 120 } });
const note = () => ({ tool: 'send_note', args: { to: 'ops', text: `mail jane-${++n}@example.com` } });

async function stats(query = '', tok = approverToken()): Promise<Stats> {
  const res = await t.app.inject({ method: 'GET', url: `/approvals/stats${query}`, headers: bearer(tok) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Stats;
}

describe('GET /approvals/stats', () => {
  it('counts each outcome per rule and kind, times the decisions, and points out a rule always granted', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    // Refunds: five granted at once (too fast to have been read), none denied.
    for (let i = 0; i < 5; i++) {
      const id = await file(refund());
      expect((await post(t.app, `/approvals/${id}/grant`, { note: 'ok' }, approverToken())).statusCode).toBe(200);
    }
    // Notes with an email address: one granted, one denied, one cancelled, one expired, one pending.
    const granted = await file(note());
    expect((await post(t.app, `/approvals/${granted}/grant`, {}, approverToken())).statusCode).toBe(200);
    const denied = await file(note());
    expect((await post(t.app, `/approvals/${denied}/deny`, { reason: 'no' }, approverToken())).statusCode).toBe(200);
    const mine = agent();
    const cancelledRes = await post(t.app, '/approvals', note(), mine);
    const cancelled = (cancelledRes.json() as { id: string }).id;
    expect(
      (await t.app.inject({ method: 'POST', url: `/approvals/${cancelled}/cancel`, headers: bearer(mine) })).statusCode,
    ).toBe(200);
    const lapsed = await file(note());
    await t.db!.sql`update approvals set expires_at = now() - interval '1 second' where id = ${lapsed}`;
    await file(note());

    const s = await stats(`?since=${encodeURIComponent(since)}`);
    expect(s).toMatchObject({ since, fast_grant_seconds: 5 });
    const byRule = new Map(s.rules.map((r) => [`${r.rule} ${r.kind}`, r]));
    expect(byRule.get('refund-support refund_over_cap')).toMatchObject({
      filed: 5,
      granted: 5,
      denied: 0,
      expired: 0,
      cancelled: 0,
      pending: 0,
      fast_grants: 5,
      suggestion: 'always_granted',
    });
    const refunds = byRule.get('refund-support refund_over_cap')!;
    expect(refunds.decide_p50_seconds).toBeGreaterThanOrEqual(0);
    expect(refunds.decide_p90_seconds as number).toBeGreaterThanOrEqual(refunds.decide_p50_seconds as number);
    const notes = [...byRule.values()].find((r) => r.kind === 'pii')!;
    expect(notes).toMatchObject({
      filed: 5,
      granted: 1,
      denied: 1,
      expired: 1,
      cancelled: 1,
      pending: 1,
      fast_grants: 1,
      suggestion: null,
    });
    // Nothing filed after now.
    expect((await stats(`?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).rules).toEqual(
      [],
    );
  });

  it('FAST_GRANT_SECONDS=0: no grant is too fast', async () => {
    const strict = await createTestApp({ env: 'prod', database: t.db!, fastGrantSeconds: 0 });
    try {
      const res = await strict.app.inject({ method: 'GET', url: '/approvals/stats', headers: bearer(adminToken()) });
      expect(res.statusCode).toBe(200);
      const body = res.json() as Stats;
      expect(body.fast_grant_seconds).toBe(0);
      expect(body.rules.length).toBeGreaterThan(0);
      for (const r of body.rules) expect(r.fast_grants).toBe(0);
    } finally {
      await strict.app.close();
    }
  });

  it('is for approvers and admins: an agent gets 403; a since that is not a date-time is 400', async () => {
    expect(
      (await t.app.inject({ method: 'GET', url: '/approvals/stats', headers: bearer(agentToken()) })).statusCode,
    ).toBe(403);
    expect(
      (await t.app.inject({ method: 'GET', url: '/approvals/stats', headers: bearer(adminToken()) })).statusCode,
    ).toBe(200);
    expect(
      (await t.app.inject({ method: 'GET', url: '/approvals/stats?since=yesterday', headers: bearer(approverToken()) }))
        .statusCode,
    ).toBe(400);
  });
});
