// Amend and grant (docs/spec.md section 5.4), over HTTP against a real PostgreSQL: the amended call
// decided again (deny and abort refuse it: 422), the grant bound to the amended call, the redeem with
// the filed arguments (403 deny, `next: use_amended`) and with the amended ones (200), a quorum that
// starts again, eligibility, the strict body and the events.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEndpoint } from '../../src/webhooks/events.js';
import { bearer, createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { assertResponseMatchesOpenApi } from '../helpers/openapi.js';
import { webhookSecret } from '../helpers/webhook-receiver.js';

const DIR = 'test/fixtures/policies/amend';
const ENDPOINT: WebhookEndpoint = {
  name: 'hooks',
  url: 'http://127.0.0.1:9/',
  format: 'standard',
  secret: webhookSecret(),
  events: null,
};

let db: TestDatabase;
let a: TestApp;
beforeAll(async () => {
  db = await createTestDatabase();
  a = await createTestApp({
    policyDir: DIR,
    env: null,
    database: db,
    webhooks: { endpoints: [ENDPOINT], worker: false },
  });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await db?.drop();
});

interface Body {
  id: string;
  status: string;
  hash: string;
  args: Record<string, unknown>;
  amended_args: Record<string, unknown> | null;
  amended_by: string | null;
  amended_at: string | null;
  grants: { by: string }[];
  requirements: { rule: string; quorum: number; granted: string[] }[];
}

let seq = 0;
const uniq = (label: string): string => `${label}-${++seq}-${randomUUID().slice(0, 8)}`;
const operator = (sub = uniq('op'), roles: string[] = []): string =>
  token({ sub, team: 'ops', roles: ['approver', ...roles] });
const agent = (sub: string): string => token({ sub, team: 'support', agent: 'bot' });

async function file(sub: string, args: Record<string, unknown>): Promise<Body> {
  const res = await post(a.app, '/approvals', { tool: 'refund', args }, agent(sub));
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as Body;
}
const grant = (id: string, tok: string, body: Record<string, unknown>) =>
  post(a.app, `/approvals/${id}/grant`, body, tok);
const decide = (sub: string, args: Record<string, unknown>, id: string) =>
  post(a.app, '/decide', { tool: 'refund', args, approval_id: id }, agent(sub));
const read = async (id: string): Promise<Body> => {
  const res = await a.app.inject({ method: 'GET', url: `/approvals/${id}`, headers: bearer(operator()) });
  expect(res.statusCode).toBe(200);
  return res.json() as Body;
};
const events = async (id: string) =>
  db.sql<{ type: string; data: string }[]>`select type, data from webhook_outbox where approval_id = ${id} order by id`;

describe('amend and grant', () => {
  it('an amendment the policy denies is 422 amendment_refused with the decision; the approval stays pending', async () => {
    const sub = uniq('agent');
    const { id } = await file(sub, { order: 'A-1', amount: 500 });
    const res = await grant(id, operator(), { note: 'more', args: { order: 'A-1', amount: 20000 } });
    expect(res.statusCode, res.body).toBe(422);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    assertResponseMatchesOpenApi('POST', `/approvals/${id}/grant`, res);
    expect(res.json()).toMatchObject({
      code: 'amendment_refused',
      decision: { decision: 'deny', rule: 'refund-cap', reason: 'refunds over 10,000 are never made by an agent' },
    });
    // The arguments are never echoed in the problem.
    expect(res.body).not.toContain('20000');
    const after = await read(id);
    expect(after).toMatchObject({ status: 'pending', amended_args: null, amended_by: null, grants: [] });
  });

  it('an amendment the policy aborts is 422 too', async () => {
    const { id } = await file(uniq('agent'), { order: 'A-2', amount: 500 });
    const res = await grant(id, operator(), { args: { order: 'A-2', amount: 500, to: 'blocked' } });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({
      code: 'amendment_refused',
      decision: { decision: 'abort', rule: 'refund-blocked' },
    });
    expect((await read(id)).status).toBe('pending');
  });

  it('an amended call is decided without the requester’s roles: a rule that reads them does not allow it (422)', async () => {
    const sub = uniq('agent');
    const payer = token({ sub, team: 'support', agent: 'bot', roles: ['payer'] });
    const res = await post(a.app, '/approvals', { tool: 'payout', args: { to: 'acct-1', amount: 10 } }, payer);
    expect(res.statusCode, res.body).toBe(201);
    const { id } = res.json() as Body;
    const amended = await grant(id, operator(), { args: { to: 'acct-1', amount: 5 } });
    expect(amended.statusCode).toBe(422);
    expect(amended.json()).toMatchObject({ code: 'amendment_refused', decision: { decision: 'deny' } });
    expect((await grant(id, operator(), {})).json()).toMatchObject({ status: 'granted', amended_args: null });
  });

  it('an accepted amendment binds the grant: the filed arguments answer 403 deny with use_amended, the amended ones 200', async () => {
    const sub = uniq('agent');
    const filed = await file(sub, { order: 'A-3', amount: 900 });
    const op = uniq('op');
    // Raw text: 450.50 is kept as a client writes it back (450.5), the same number.
    const res = await a.app.inject({
      method: 'POST',
      url: `/approvals/${filed.id}/grant`,
      headers: { ...bearer(operator(op)), 'content-type': 'application/json' },
      payload: '{"note":"half of it","args":{"order":"A-3","amount":450.50}}',
    });
    expect(res.statusCode, res.body).toBe(200);
    assertResponseMatchesOpenApi('POST', `/approvals/${filed.id}/grant`, res);
    const granted = res.json() as Body;
    expect(granted).toMatchObject({
      status: 'granted',
      args: { order: 'A-3', amount: 900 },
      amended_args: { order: 'A-3', amount: 450.5 },
      amended_by: op,
      hash: filed.hash,
    });
    expect(res.body).toContain('"amended_args":{"amount":450.5,"order":"A-3"}');
    expect(granted.amended_at).toEqual(expect.any(String));

    const original = await decide(sub, { order: 'A-3', amount: 900 }, filed.id);
    expect(original.statusCode).toBe(403);
    const denied = original.json();
    expect(denied).toMatchObject({
      decision: 'deny',
      next: { action: 'use_amended', approval_id: filed.id, args: { order: 'A-3', amount: 450.5 } },
    });
    expect(denied.reason).toMatch(/amended/);
    expect(denied.next.url).toBe('/decide');
    expect((await read(filed.id)).status).toBe('granted');

    // Another call altogether is not this approval's: a new approval is needed.
    const other = await decide(sub, { order: 'A-3', amount: 700 }, filed.id);
    expect(other.json()).toMatchObject({ decision: 'require_approval', next: { action: 'file_new' } });

    // What a JavaScript client sends back: JSON.stringify of next.args.
    const amended = await decide(sub, JSON.parse(JSON.stringify(denied.next.args)), filed.id);
    expect(amended.statusCode, amended.body).toBe(200);
    expect(amended.json()).toMatchObject({ decision: 'allow', approval: { id: filed.id, status: 'consumed' } });
    expect((await read(filed.id)).status).toBe('consumed');
    expect((await decide(sub, { order: 'A-3', amount: 450.5 }, filed.id)).statusCode).toBe(403);
    expect(await db.sql`select hash, amended_hash from approvals where id = ${filed.id}`).toEqual([
      { hash: filed.hash, amended_hash: expect.stringMatching(/^sha256:/) },
    ]);
  });

  it('a redeem of the amended call whose answer is lost is answered again under its Idempotency-Key', async () => {
    const sub = uniq('agent');
    const filed = await file(sub, { order: 'A-6', amount: 600 });
    expect((await grant(filed.id, operator(), { args: { order: 'A-6', amount: 400 } })).statusCode).toBe(200);
    const keyed = () =>
      a.app.inject({
        method: 'POST',
        url: '/decide',
        headers: { ...bearer(agent(sub)), 'content-type': 'application/json', 'idempotency-key': `k-${filed.id}` },
        payload: JSON.stringify({ tool: 'refund', args: { order: 'A-6', amount: 400 }, approval_id: filed.id }),
      });
    const first = await keyed();
    expect(first.statusCode, first.body).toBe(200);
    const again = await keyed();
    expect(again.statusCode, again.body).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toMatchObject({ decision: 'allow', decision_id: first.json().decision_id });
  });

  it('the same arguments as filed are a plain grant', async () => {
    const sub = uniq('agent');
    const filed = await file(sub, { order: 'A-4', amount: 300 });
    const res = await grant(filed.id, operator(), { args: { amount: 300, order: 'A-4' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'granted', amended_args: null, amended_by: null });
    expect((await decide(sub, { order: 'A-4', amount: 300 }, filed.id)).statusCode).toBe(200);
  });

  it('the grant only screens the amended call: a rule on the requester’s roles applies at its redeem, which then consumes nothing', async () => {
    const sub = uniq('intern');
    const intern = token({ sub, team: 'support', agent: 'bot', roles: ['intern'] });
    const filedRes = await post(a.app, '/approvals', { tool: 'refund', args: { order: 'A-9', amount: 300 } }, intern);
    expect(filedRes.statusCode, filedRes.body).toBe(201);
    const filed = filedRes.json() as Body;
    // Screened without roles: 10 is allowed outright, so the amendment is granted.
    const res = await grant(filed.id, operator(), { args: { order: 'A-9', amount: 10 } });
    expect(res.statusCode, res.body).toBe(200);
    const redeem = await post(
      a.app,
      '/decide',
      { tool: 'refund', args: { order: 'A-9', amount: 10 }, approval_id: filed.id },
      intern,
    );
    expect(redeem.statusCode).toBe(403);
    expect(redeem.json()).toMatchObject({ decision: 'deny', rule: 'no-small-refunds-by-interns' });
    expect((await read(filed.id)).status).toBe('granted');
  });

  it('an amendment the policy allows outright still grants the approval; the amended call runs', async () => {
    const sub = uniq('agent');
    const filed = await file(sub, { order: 'A-5', amount: 300 });
    const res = await grant(filed.id, operator(), { args: { order: 'A-5', amount: 50 } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ status: 'granted', amended_args: { order: 'A-5', amount: 50 } });
    const original = await decide(sub, { order: 'A-5', amount: 300 }, filed.id);
    expect(original.json()).toMatchObject({ decision: 'deny', next: { action: 'use_amended' } });
    expect((await decide(sub, { order: 'A-5', amount: 50 }, filed.id)).statusCode).toBe(200);
  });

  it('under a quorum of 2 an amendment starts the count again, the amender’s grant its first', async () => {
    const sub = uniq('agent');
    const filed = await file(sub, { order: 'B-1', amount: 5000 });
    const [first, amender] = [uniq('fin'), uniq('fin')];
    expect((await grant(filed.id, operator(first, ['finance']), { note: 'ok' })).json()).toMatchObject({
      status: 'pending',
      grants: [{ by: first }],
    });
    const amended = await grant(filed.id, operator(amender, ['finance']), { args: { order: 'B-1', amount: 4000 } });
    expect(amended.statusCode, amended.body).toBe(200);
    const body = amended.json() as Body;
    expect(body).toMatchObject({ status: 'pending', amended_by: amender, grants: [{ by: amender }] });
    expect(body.grants).toHaveLength(1);
    expect(body.requirements).toEqual([expect.objectContaining({ rule: 'refund-big', quorum: 2, granted: [amender] })]);
    // The queue agrees: the first granter may answer it again, the amender has.
    const queue = async (sub: string): Promise<string[]> => {
      const res = await a.app.inject({
        method: 'GET',
        url: '/approvals?eligible=true&limit=200',
        headers: bearer(operator(sub, ['finance'])),
      });
      return (res.json() as { items: { id: string }[] }).items.map((i) => i.id);
    };
    expect(await queue(first)).toContain(filed.id);
    expect(await queue(amender)).not.toContain(filed.id);
    // The first granter's grant was for the call as filed: they grant again, and it counts.
    const done = await grant(filed.id, operator(first, ['finance']), {});
    expect(done.json()).toMatchObject({ status: 'granted', amended_args: { order: 'B-1', amount: 4000 } });
    expect((await decide(sub, { order: 'B-1', amount: 5000 }, filed.id)).json()).toMatchObject({
      decision: 'deny',
      next: { action: 'use_amended' },
    });
    expect((await decide(sub, { order: 'B-1', amount: 4000 }, filed.id)).statusCode).toBe(200);
    const types = (await events(filed.id)).map((e) => e.type);
    expect(types).toEqual([
      'approval.created',
      'approval.partially_granted',
      'approval.partially_granted',
      'approval.granted',
      'approval.consumed',
    ]);
    const partial = JSON.parse((await events(filed.id))[2]!.data);
    expect(partial).toMatchObject({ amended_by: amender, amended_at: expect.any(String) });
  });

  it('two amendments racing: taken one at a time, the later restarts the count, its amender the only grant', async () => {
    const filed = await file(uniq('agent'), { order: 'B-3', amount: 5000 });
    const [x, y] = [uniq('fin'), uniq('fin')];
    const answers = await Promise.all([
      grant(filed.id, operator(x, ['finance']), { args: { order: 'B-3', amount: 4000 } }),
      grant(filed.id, operator(y, ['finance']), { args: { order: 'B-3', amount: 3000 } }),
    ]);
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200]);
    const after = await read(filed.id);
    expect(after.status).toBe('pending');
    expect(after.grants.map((g) => g.by)).toEqual([after.amended_by]);
    expect(after.amended_args).toEqual({ order: 'B-3', amount: after.amended_by === x ? 4000 : 3000 });
  });

  it('an amendment moving the call under a stricter rule asks for that rule’s approvers and quorum', async () => {
    const sub = uniq('agent');
    const filed = await file(sub, { order: 'B-2', amount: 800 });
    // Not of finance: not eligible for the amended call (refund-big), though it may grant the filed one.
    const outsider = await grant(filed.id, operator(), { args: { order: 'B-2', amount: 2000 } });
    expect(outsider.statusCode).toBe(403);
    expect(outsider.json()).toMatchObject({
      code: 'not_eligible',
      requirements: [{ rule: 'refund-big', why: ['role'] }],
    });
    expect(await read(filed.id)).toMatchObject({ status: 'pending', amended_args: null });
    const fin = uniq('fin');
    const res = await grant(filed.id, operator(fin, ['finance']), { args: { order: 'B-2', amount: 2000 } });
    expect(res.json()).toMatchObject({ status: 'pending', amended_by: fin });
  });

  it('the requester cannot amend its own approval; a decided approval is 409; unknown keys are 422', async () => {
    const sub = uniq('agent');
    const filed = await file(sub, { order: 'C-1', amount: 300 });
    const self = await grant(filed.id, token({ sub, team: 'support', roles: ['approver'] }), {
      args: { order: 'C-1', amount: 200 },
    });
    expect(self.statusCode).toBe(403);
    const strict = await grant(filed.id, operator(), { args: { order: 'C-1', amount: 200 }, tool: 'other' });
    expect(strict.statusCode).toBe(422);
    const notObject = await grant(filed.id, operator(), { args: [1] });
    expect(notObject.statusCode).toBe(422);
    expect((await grant(filed.id, operator(), {})).statusCode).toBe(200);
    const late = await grant(filed.id, operator(), { args: { order: 'C-1', amount: 100 } });
    expect(late.statusCode).toBe(409);
    expect(await read(filed.id)).toMatchObject({ status: 'granted', amended_args: null });
  });

  it('the database is the backstop: an amendment changes only while pending, never by the requester, one round at a time', async () => {
    const sub = uniq('agent');
    const filed = await file(sub, { order: 'D-1', amount: 300 });
    const amend = (by: string, round: string) =>
      db.sql.unsafe(
        `update approvals set amended_args = '{"amount":1}', amended_hash = hash, amended_by = $1, amended_at = now(),
                grant_round = ${round} where id = $2`,
        [by, filed.id],
      );
    await expect(amend(sub, 'grant_round + 1')).rejects.toThrow(/nobody amends their own request/);
    await expect(amend('op', 'grant_round + 2')).rejects.toThrow(/next round/);
    expect((await grant(filed.id, operator(), {})).json()).toMatchObject({ status: 'granted' });
    await expect(amend('op', 'grant_round + 1')).rejects.toThrow(/only while pending/);
  });

  it('amended arguments over the approval size limit are 413', async () => {
    const filed = await file(uniq('agent'), { order: 'C-2', amount: 300 });
    const res = await grant(filed.id, operator(), { args: { order: 'x'.repeat(70_000), amount: 300 } });
    expect(res.statusCode).toBe(413);
    expect(await read(filed.id)).toMatchObject({ status: 'pending', amended_args: null });
  });
});
