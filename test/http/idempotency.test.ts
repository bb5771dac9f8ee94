// Idempotency-Key on /decide with approval_id and on POST /approvals (docs/spec.md section 5.3),
// against a real PostgreSQL: a retry reads the answer the key was given, across replicas and under
// concurrent retries, instead of acting again.
import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approverToken, bearer, createTestApp, token, type TestApp } from '../helpers/app.js';

let t: TestApp;
let replica: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: 'prod', database: true });
  replica = await createTestApp({ env: 'prod', database: t.db! });
});
afterAll(async () => {
  await replica.close();
  await t.close();
});

let seq = 0;
const newSub = (): string => `idem-${++seq}-${randomUUID().slice(0, 8)}`;
const agent = (sub: string): string => token({ sub, team: 'support', agent: 'bot' });
const bigRefund = () => ({ tool: 'refund', args: { order: `I-${++seq}`, amount: 120, note: 'asked twice' } });

function send(
  app: TestApp,
  url: string,
  body: unknown,
  tok: string,
  key?: string | string[],
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string | string[]> = { ...bearer(tok), 'content-type': 'application/json' };
  if (key !== undefined) headers['idempotency-key'] = key;
  return app.app.inject({ method: 'POST', url, headers, payload: JSON.stringify(body) });
}

async function granted(sub: string): Promise<{ id: string; body: ReturnType<typeof bigRefund> }> {
  const body = bigRefund();
  const filed = await send(t, '/approvals', body, agent(sub));
  expect(filed.statusCode).toBe(201);
  const { id } = filed.json() as { id: string };
  expect((await send(t, `/approvals/${id}/grant`, {}, approverToken())).statusCode).toBe(200);
  return { id, body };
}

async function consumeEvents(id: string): Promise<number> {
  const [row] = await t.db!.sql<{ n: number }[]>`
    select count(*)::int as n from approval_events where approval_id = ${id} and to_status = 'consumed'`;
  return row!.n;
}

describe('a redeem with an Idempotency-Key', () => {
  it('retried after a lost answer reads that answer, byte for byte, and the approval is consumed once', async () => {
    const sub = newSub();
    const { id, body } = await granted(sub);
    const key = randomUUID();
    const first = await send(t, '/decide', { ...body, approval_id: id }, agent(sub), key);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ decision: 'allow', approval: { id, status: 'consumed' } });
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const retry = await send(t, '/decide', { ...body, approval_id: id }, agent(sub), key);
    expect(retry.statusCode).toBe(200);
    expect(retry.body).toBe(first.body);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.headers['content-type']).toMatch(/^application\/json/);
    expect(await consumeEvents(id)).toBe(1);
    // Without the key (or with another) the request is decided again: the grant is spent.
    const plain = await send(t, '/decide', { ...body, approval_id: id }, agent(sub));
    expect(plain.json()).toMatchObject({
      decision: 'require_approval',
      approval: { status: 'consumed' },
      next: { action: 'file_new' },
    });
    const other = await send(t, '/decide', { ...body, approval_id: id }, agent(sub), randomUUID());
    expect(other.statusCode).toBe(403);
  });

  it('retried on another replica reads the same answer', async () => {
    const sub = newSub();
    const { id, body } = await granted(sub);
    const key = randomUUID();
    const first = await send(t, '/decide', { ...body, approval_id: id }, agent(sub), key);
    const retry = await send(replica, '/decide', { ...body, approval_id: id }, agent(sub), key);
    expect([first.statusCode, retry.statusCode]).toEqual([200, 200]);
    expect(retry.body).toBe(first.body);
    expect(await consumeEvents(id)).toBe(1);
  });

  it('retried 12 times at once, on two replicas: one act, one answer', async () => {
    const sub = newSub();
    const { id, body } = await granted(sub);
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        send(i % 2 ? replica : t, '/decide', { ...body, approval_id: id }, agent(sub), key),
      ),
    );
    expect(answers.map((a) => a.statusCode)).toEqual(Array(12).fill(200));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(answers.filter((a) => a.headers['idempotent-replayed'] === 'true')).toHaveLength(11);
    expect(await consumeEvents(id)).toBe(1);
  });

  it('keeps no refusal: a pending approval cited with a key is decided afresh, and the same key redeems once granted', async () => {
    const sub = newSub();
    const body = bigRefund();
    const { id } = (await send(t, '/approvals', body, agent(sub))).json() as { id: string };
    const key = randomUUID();
    const pending = await send(t, '/decide', { ...body, approval_id: id }, agent(sub), key);
    expect(pending.json()).toMatchObject({ decision: 'require_approval', next: { action: 'wait' } });
    expect(await t.db!.sql`select 1 from idempotency_keys where key = ${key}`).toHaveLength(0);
    await send(t, `/approvals/${id}/grant`, {}, approverToken());
    const redeemed = await send(t, '/decide', { ...body, approval_id: id }, agent(sub), key);
    expect(redeemed.statusCode).toBe(200);
    expect(redeemed.headers['idempotent-replayed']).toBeUndefined();
    const again = await send(t, '/decide', { ...body, approval_id: id }, agent(sub), key);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(redeemed.body);
    expect(await consumeEvents(id)).toBe(1);
  });

  it('the same key with another body is 422, and acts on nothing', async () => {
    const sub = newSub();
    const spent = await granted(sub);
    const { id, body } = await granted(sub);
    const key = randomUUID();
    expect((await send(t, '/decide', { ...spent.body, approval_id: spent.id }, agent(sub), key)).statusCode).toBe(200);
    const reused = await send(t, '/decide', { ...body, approval_id: id }, agent(sub), key);
    expect(reused.statusCode).toBe(422);
    expect(reused.json()).toMatchObject({ code: 'idempotency_key_reused' });
    expect(await consumeEvents(id)).toBe(0);
    // 150 and 150.0 are two bodies: the key is bound to the body as written.
    const k2 = randomUUID();
    const text = (amount: string) =>
      `{"tool":"refund","args":{"order":"${body.args.order}","amount":${amount},"note":"asked twice"},"approval_id":"${id}"}`;
    const raw = (amount: string) =>
      t.app.inject({
        method: 'POST',
        url: '/decide',
        headers: { ...bearer(agent(sub)), 'content-type': 'application/json', 'idempotency-key': k2 },
        payload: text(amount),
      });
    expect((await raw('120')).statusCode).toBe(200);
    expect((await raw('120.0')).statusCode).toBe(422);
  });

  it('keys are per caller: another sub with the same key acts for itself', async () => {
    const a = newSub();
    const b = newSub();
    const ga = await granted(a);
    const gb = await granted(b);
    const key = 'shared-key';
    expect((await send(t, '/decide', { ...ga.body, approval_id: ga.id }, agent(a), key)).statusCode).toBe(200);
    expect((await send(t, '/decide', { ...gb.body, approval_id: gb.id }, agent(b), key)).statusCode).toBe(200);
  });

  it('a key older than 24 hours is forgotten: the request is decided again', async () => {
    const sub = newSub();
    const { id, body } = await granted(sub);
    const key = randomUUID();
    expect((await send(t, '/decide', { ...body, approval_id: id }, agent(sub), key)).statusCode).toBe(200);
    await t.db!.sql`update idempotency_keys set created_at = now() - interval '25 hours' where key = ${key}`;
    const later = await send(t, '/decide', { ...body, approval_id: id }, agent(sub), key);
    expect(later.statusCode).toBe(403);
    expect(later.headers['idempotent-replayed']).toBeUndefined();
    // The sweep drops what is past its time.
    await t.db!.sql`update idempotency_keys set created_at = now() - interval '25 hours' where key = ${key}`;
    await t.ctx.approvals!.store.sweep();
    expect(await t.db!.sql`select 1 from idempotency_keys where key = ${key}`).toHaveLength(0);
  });

  it('a malformed or repeated key is 400; on /decide without approval_id the key changes nothing', async () => {
    const sub = newSub();
    const { id, body } = await granted(sub);
    for (const key of ['', 'has space', 'x'.repeat(256), 'é']) {
      const res = await send(t, '/decide', { ...body, approval_id: id }, agent(sub), key);
      expect(res.statusCode, JSON.stringify(key)).toBe(400);
      expect(res.headers['content-type']).toMatch(/problem\+json/);
    }
    expect(await consumeEvents(id)).toBe(0);
    const lookup = { tool: 'lookup_order', args: { order: 'A1' } };
    const once = await send(t, '/decide', lookup, agent(sub), 'k');
    const twice = await send(t, '/decide', lookup, agent(sub), 'k');
    expect([once.statusCode, twice.statusCode]).toEqual([200, 200]);
    expect(twice.headers['idempotent-replayed']).toBeUndefined();
    expect((once.json() as { decision_id: string }).decision_id).not.toBe(
      (twice.json() as { decision_id: string }).decision_id,
    );
  });
});

describe('filing with an Idempotency-Key', () => {
  it('a retry reads the original 201, even once the approval has moved on', async () => {
    const sub = newSub();
    const body = bigRefund();
    const key = randomUUID();
    const first = await send(t, '/approvals', body, agent(sub), key);
    expect(first.statusCode).toBe(201);
    const { id } = first.json() as { id: string };
    const retry = await send(replica, '/approvals', body, agent(sub), key);
    expect(retry.statusCode).toBe(201);
    expect(retry.body).toBe(first.body);
    // Without a key, filing the same request again finds the live approval (200).
    expect((await send(t, '/approvals', body, agent(sub))).statusCode).toBe(200);
    await send(t, `/approvals/${id}/deny`, { reason: 'no' }, approverToken());
    expect((await send(t, '/approvals', body, agent(sub), key)).statusCode).toBe(201);
    expect(
      (await send(t, '/approvals', { ...body, args: { ...body.args, amount: 121 } }, agent(sub), key)).statusCode,
    ).toBe(422);
  });

  it('a 429 is not kept: once a place is free, the same key files', async () => {
    const capped = await createTestApp({ env: 'prod', database: t.db!, maxPendingApprovals: 1 });
    try {
      const sub = newSub();
      const held = (await send(capped, '/approvals', bigRefund(), agent(sub))).json() as { id: string };
      const key = randomUUID();
      const body = bigRefund();
      expect((await send(capped, '/approvals', body, agent(sub), key)).statusCode).toBe(429);
      expect(await t.db!.sql`select 1 from idempotency_keys where key = ${key}`).toHaveLength(0);
      await send(capped, `/approvals/${held.id}/cancel`, {}, agent(sub));
      expect((await send(capped, '/approvals', body, agent(sub), key)).statusCode).toBe(201);
    } finally {
      await capped.close();
    }
  });

  it('a 409 that counted nothing changed nothing: it is not kept, and a retry is decided afresh', async () => {
    const sub = newSub();
    const key = randomUUID();
    const first = await send(t, '/approvals', { tool: 'lookup_order', args: { order: 'A1' } }, agent(sub), key);
    expect(first.statusCode).toBe(409);
    const retry = await send(t, '/approvals', { tool: 'lookup_order', args: { order: 'A1' } }, agent(sub), key);
    expect(retry.statusCode).toBe(409);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(retry.json()).toMatchObject({ decision: 'allow', rule: 'lookups' });
    expect(await t.db!.sql`select 1 from idempotency_keys where key = ${key}`).toHaveLength(0);
  });
});
