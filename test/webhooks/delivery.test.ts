// Webhooks against a real PostgreSQL and real receivers on 127.0.0.1 (docs/spec.md section 5.8):
// every transition's event once, signed as Standard Webhooks and verified by the `standardwebhooks`
// package; the outbox row written in the transition's transaction; a receiver that is down, errs or
// hangs, then comes back; two instances on one database; the retry window's end (failed, in
// /metrics and GET /admin/webhooks); the Slack message; housekeeping; a clean stop.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { request } from '../approvals/fixtures.js';
import { createOutbox } from '../../src/webhooks/outbox.js';
import type { WebhookEndpoint, WebhookEventType } from '../../src/webhooks/events.js';
import { retryDelayMs } from '../../src/webhooks/worker.js';
import {
  adminToken,
  approverToken,
  bearer,
  createTestApp,
  post,
  token,
  type TestApp,
  type TestWebhooks,
} from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { compileDocumentSchema } from '../helpers/openapi.js';
import { eventually } from '../helpers/process.js';
import {
  startWebhookReceiver,
  webhookSecret,
  type ReceivedWebhook,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js';

const PUBLIC_URL = 'https://gatehouse.example.com';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()?.();
});

let seq = 0;
const newSub = (): string => `agent-${++seq}-${randomUUID().slice(0, 8)}`;
const agent = (sub: string): string => token({ sub, team: 'support', agent: 'bot' });
const bigRefund = () => ({ tool: 'refund', args: { order: `O-${++seq}`, amount: 120, note: 'customer asked twice' } });

interface EventBody {
  type: WebhookEventType;
  timestamp: string;
  data: Record<string, unknown> & { id: string; status: string; url: string };
}

async function receiver(
  secret: string | null = webhookSecret(),
  port = 0,
): Promise<{ r: WebhookReceiver; secret: string | null }> {
  const r = await startWebhookReceiver(secret, port);
  cleanup.push(() => r.close());
  return { r, secret };
}

function endpoint(
  name: string,
  r: WebhookReceiver,
  secret: string | null,
  extra: Partial<WebhookEndpoint> = {},
): WebhookEndpoint {
  return { name, url: r.url, format: secret === null ? 'slack' : 'standard', secret, events: null, ...extra };
}

async function app(webhooks: TestWebhooks, database: TestDatabase = db): Promise<TestApp> {
  const t = await createTestApp({ database, webhooks: { publicUrl: PUBLIC_URL, ...webhooks } });
  cleanup.push(() => t.close());
  return t;
}

async function file(
  t: TestApp,
  sub = newSub(),
): Promise<{ id: string; hash: string; sub: string; body: ReturnType<typeof bigRefund> }> {
  const body = bigRefund();
  const res = await post(t.app, '/approvals', body, agent(sub));
  expect(res.statusCode, res.body).toBe(201);
  const { id, hash } = JSON.parse(res.body) as { id: string; hash: string };
  return { id, hash, sub, body };
}

interface OutboxRow {
  id: string;
  endpoint: string;
  type: string;
  approval_id: string;
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
}
const rowsIn = (database: TestDatabase, approvalIds: string[]): Promise<OutboxRow[]> =>
  database.sql<OutboxRow[]>`
    select id, endpoint, type, approval_id, status, attempts, last_status, last_error from webhook_outbox
     where approval_id = any(string_to_array(${approvalIds.join(',')}, ',')::uuid[]) order by id`.then((rows) => [
    ...rows,
  ]);
const rowsOf = (approvalIds: string[]): Promise<OutboxRow[]> => rowsIn(db, approvalIds);

/** Waits until none of these approvals' deliveries is pending any more. */
const settled = (approvalIds: string[], ms = 20_000): Promise<OutboxRow[]> =>
  eventually('the deliveries to settle', ms, async () => {
    const rows = await rowsOf(approvalIds);
    return rows.length > 0 && rows.every((r) => r.status !== 'pending') ? rows : undefined;
  });

const bodyOf = (w: ReceivedWebhook): EventBody => JSON.parse(w.body) as EventBody;
const ages = (id: string) => db.sql`update approvals set expires_at = now() - interval '1 second' where id = ${id}`;

describe('one event per transition', () => {
  it('created, granted, denied, cancelled, consumed and expired: each once, signed, with the summary and the link', async () => {
    const { r, secret } = await receiver();
    const grants = await receiver();
    const t = await app({
      endpoints: [
        endpoint('ops', r, secret),
        endpoint('grants', grants.r, grants.secret, { events: ['approval.granted'] }),
      ],
    });
    const store = t.ctx.approvals!.store;

    const redeemed = await file(t);
    expect(
      (await post(t.app, `/approvals/${redeemed.id}/grant`, { note: 'checked' }, approverToken())).statusCode,
    ).toBe(200);
    const redeem = await post(t.app, '/decide', { ...redeemed.body, approval_id: redeemed.id }, agent(redeemed.sub));
    expect(JSON.parse(redeem.body).decision).toBe('allow');
    const denied = await file(t);
    expect(
      (await post(t.app, `/approvals/${denied.id}/deny`, { reason: 'not this one' }, approverToken())).statusCode,
    ).toBe(200);
    const cancelled = await file(t);
    expect((await post(t.app, `/approvals/${cancelled.id}/cancel`, {}, agent(cancelled.sub))).statusCode).toBe(200);
    const lapsed = await file(t);
    await ages(lapsed.id);
    const grantedThenLapsed = await file(t);
    expect((await post(t.app, `/approvals/${grantedThenLapsed.id}/grant`, {}, approverToken())).statusCode).toBe(200);
    await ages(grantedThenLapsed.id);
    // The sweep writes the expiries; sweeps and transitions racing it write none again.
    await Promise.all([
      store.sweep(),
      store.sweep(),
      store.grant(lapsed.id, { sub: 'operator-2' }, null),
      store.cancel(lapsed.id, { sub: lapsed.sub }),
    ]);
    expect(await store.sweep()).toBe(0);

    const ids = [redeemed.id, denied.id, cancelled.id, lapsed.id, grantedThenLapsed.id];
    const rows = await settled(ids);
    expect(rows.every((row) => row.status === 'delivered')).toBe(true);
    const received = r.delivered();
    expect(r.received.every((w) => w.verified === true)).toBe(true);
    expect(new Set(received.map((w) => w.headers['webhook-id'])).size).toBe(received.length);
    const typesOf = (id: string): string[] =>
      received
        .map(bodyOf)
        .filter((e) => e.data.id === id)
        .map((e) => e.type)
        .sort();
    expect(typesOf(redeemed.id)).toEqual(['approval.consumed', 'approval.created', 'approval.granted']);
    expect(typesOf(denied.id)).toEqual(['approval.created', 'approval.denied']);
    expect(typesOf(cancelled.id)).toEqual(['approval.cancelled', 'approval.created']);
    expect(typesOf(lapsed.id)).toEqual(['approval.created', 'approval.expired']);
    expect(typesOf(grantedThenLapsed.id)).toEqual(['approval.created', 'approval.expired', 'approval.granted']);
    // The filtered endpoint got the grants only.
    await eventually('the grants endpoint', 10_000, async () => (grants.r.delivered().length >= 2 ? true : undefined));
    expect(
      grants.r
        .delivered()
        .map(bodyOf)
        .map((e) => [e.type, e.data.id])
        .sort(),
    ).toEqual(
      [
        ['approval.granted', redeemed.id],
        ['approval.granted', grantedThenLapsed.id],
      ].sort(),
    );

    const validate = compileDocumentSchema({ $ref: '#/components/schemas/WebhookEvent' });
    for (const w of received) {
      const event = bodyOf(w);
      expect(validate(event), JSON.stringify(validate.errors)).toBe(true);
      expect(w.payload).toEqual(event); // what Webhook.verify returned
      expect(w.headers['content-type']).toBe('application/json');
      expect(event.data).not.toHaveProperty('args');
      expect(event.data.url).toBe(`${PUBLIC_URL}/ui#approval=${event.data.id}`);
      expect(event.data.status).toBe(
        event.type === 'approval.created' ? 'pending' : event.type.slice('approval.'.length),
      );
      // The event's time is its transition's (the same transaction's clock).
      const at = {
        'approval.created': event.data.created_at,
        'approval.granted': event.data.decided_at,
        'approval.denied': event.data.decided_at,
      }[event.type as 'approval.created'];
      if (at !== undefined) expect(event.timestamp).toBe(at);
      if (event.type === 'approval.consumed') expect(event.timestamp).toBe(event.data.consumed_at);
    }
    const grant = received.map(bodyOf).find((e) => e.type === 'approval.granted' && e.data.id === redeemed.id)!;
    expect(grant.data).toMatchObject({
      decided_by: 'operator-1',
      decision_note: 'checked',
      tool: 'refund',
      requester: { sub: redeemed.sub, team: 'support' },
    });
  });

  it('a transition that rolls back queues nothing, and of racing transitions only the winner queues its event', async () => {
    const t = await app({
      endpoints: [{ name: 'queued-only', url: 'http://127.0.0.1:9/', format: 'slack', secret: null, events: null }],
      worker: false,
    });
    const store = t.ctx.approvals!.store;
    const sub = newSub();
    let filedId = '';
    await expect(
      db.sql.begin(async (tx) => {
        filedId = (await store.create(request({ sub }), tx)).approval.id;
        throw new Error('the rest of the transaction failed');
      }),
    ).rejects.toThrow(/the rest of the transaction failed/);
    expect(filedId).not.toBe('');
    expect(await rowsOf([filedId])).toEqual([]);
    expect(await store.get(filedId)).toBeNull();

    const raced = await file(t);
    const answers = await Promise.all(
      ['a', 'b', 'c', 'd', 'e'].map((n) =>
        post(t.app, `/approvals/${raced.id}/grant`, {}, approverToken(`operator-${n}`)),
      ),
    );
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 409, 409, 409, 409]);
    expect((await rowsOf([raced.id])).map((row) => row.type)).toEqual(['approval.created', 'approval.granted']);
  });
});

describe('retries', () => {
  it('a receiver that answers errors, then 2xx: the same id and body on every attempt, delivered once', async () => {
    const { r, secret } = await receiver();
    r.answer = 503;
    const t = await app({ endpoints: [endpoint('ops', r, secret, { events: ['approval.created'] })] });
    const { id } = await file(t);
    await eventually('three refused attempts', 10_000, async () => (r.received.length >= 3 ? true : undefined));
    const [row] = await rowsOf([id]);
    expect(row).toMatchObject({ status: 'pending', last_status: 503, last_error: 'the receiver answered HTTP 503' });
    expect(row!.attempts).toBeGreaterThanOrEqual(3);
    r.answer = 200;
    const [done] = await settled([id]);
    expect(done).toMatchObject({
      status: 'delivered',
      last_status: 200,
      last_error: null,
      attempts: r.received.length,
    });
    expect(r.delivered()).toHaveLength(1);
    expect(new Set(r.received.map((w) => w.headers['webhook-id']))).toEqual(new Set([done!.id]));
    expect(new Set(r.received.map((w) => w.body)).size).toBe(1);
    expect(r.received.every((w) => w.verified === true)).toBe(true);
  });

  it('a receiver that is down (connection refused), then back on its port: delivered once it is', async () => {
    const { r, secret } = await receiver();
    await r.stop();
    const t = await app({ endpoints: [endpoint('ops', r, secret, { events: ['approval.created'] })] });
    const { id } = await file(t);
    const refused = await eventually('two refused attempts', 10_000, async () => {
      const [row] = await rowsOf([id]);
      return row !== undefined && row.attempts >= 2 ? row : undefined;
    });
    expect(refused).toMatchObject({ status: 'pending', last_status: null, last_error: 'no answer: ECONNREFUSED' });
    await r.start();
    await settled([id]);
    expect(r.received).toHaveLength(1);
    expect(r.delivered()).toHaveLength(1);
  });

  it('a receiver that never answers: the attempt is cut at WEBHOOK_TIMEOUT and retried; requests are served meanwhile', async () => {
    const { r, secret } = await receiver();
    r.answer = 'hang';
    const t = await app({ endpoints: [endpoint('ops', r, secret)], timeoutMs: 1_000 });
    const first = await file(t);
    await eventually('the hung attempt', 10_000, async () => (r.received.length >= 1 ? true : undefined));
    // While the delivery hangs, the API answers (the worker is off the request path).
    const second = await file(t);
    expect((await post(t.app, `/approvals/${second.id}/grant`, {}, approverToken())).statusCode).toBe(200);
    expect(
      (await post(t.app, '/decide', { ...second.body, approval_id: second.id }, agent(second.sub))).statusCode,
    ).toBe(200);
    expect(r.received.every((w) => w.answered === null)).toBe(true); // nothing was answered yet
    const cut = await eventually('a timed-out attempt', 10_000, async () => {
      const [row] = await rowsOf([first.id]);
      return row?.last_error?.startsWith('no answer within') ? row : undefined;
    });
    expect(cut).toMatchObject({ status: 'pending', last_status: null, last_error: 'no answer within 1000 ms' });
    r.answer = 204;
    const rows = await settled([first.id, second.id]);
    expect(rows.map((row) => row.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
  });

  it('the pause doubles from WEBHOOK_RETRY_MIN up to WEBHOOK_RETRY_MAX, jittered to 50–100 %', () => {
    const low = (): number => 0;
    const high = (): number => 0.999_999;
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(n, 5_000, 60_000, low))).toEqual([
      2_500, 5_000, 10_000, 20_000, 30_000, 30_000,
    ]);
    expect([1, 2, 3, 4, 5, 6].map((n) => Math.round(retryDelayMs(n, 5_000, 60_000, high)))).toEqual([
      5_000, 10_000, 20_000, 40_000, 60_000, 60_000,
    ]);
    expect(retryDelayMs(10_000, 5_000, 3_600_000, high)).toBeLessThanOrEqual(3_600_000);
    // The defaults (5 s doubling to 1 h) retry about 30 times within WEBHOOK_RETRY_FOR's 24 h, even at the longest pauses.
    let spent = 0;
    let attempts = 1;
    while (spent + retryDelayMs(attempts, 5_000, 3_600_000, high) <= 86_400_000)
      spent += retryDelayMs(attempts++, 5_000, 3_600_000, high);
    expect(attempts).toBeGreaterThanOrEqual(30);
  });
});

describe('several replicas', () => {
  it('two instances on one database, each with a worker: every event is delivered exactly once', async () => {
    const shared = await createTestDatabase();
    cleanup.push(() => shared.drop());
    const { r, secret } = await receiver();
    r.delayMs = 5; // attempts overlap across the two workers
    const endpoints = [endpoint('ops', r, secret)];
    const outcomes = { a: 0, b: 0 };
    const a = await app({ endpoints, pollMs: 10, batch: 4, onOutcome: () => outcomes.a++ }, shared);
    const b = await app({ endpoints, pollMs: 10, batch: 4, onOutcome: () => outcomes.b++ }, shared);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const on = i % 2 === 0 ? a : b;
      const filed = await file(on);
      ids.push(filed.id);
      expect(
        (await post((i % 3 === 0 ? a : b).app, `/approvals/${filed.id}/grant`, {}, approverToken())).statusCode,
      ).toBe(200);
    }
    const rows = await eventually('every delivery', 30_000, async () => {
      const all = await shared.sql<{ id: string; status: string }[]>`select id, status from webhook_outbox`;
      return all.length === 40 && all.every((row) => row.status === 'delivered') ? all : undefined;
    });
    const delivered = r.delivered().map((w) => w.headers['webhook-id']);
    expect(delivered.sort()).toEqual(rows.map((row) => row.id).sort());
    expect(r.received).toHaveLength(40); // no attempt failed, none was made twice
    expect(outcomes.a + outcomes.b).toBe(40);
  });
});

describe('failed deliveries', () => {
  it('past WEBHOOK_RETRY_FOR the delivery is failed: no more attempts, in /metrics and GET /admin/webhooks', async () => {
    const { r, secret } = await receiver();
    r.answer = 500;
    const t = await app({
      endpoints: [endpoint('gives-up', r, secret, { events: ['approval.created'] })],
      retryForMs: 400,
      retryMinMs: 50,
      retryMaxMs: 100,
    });
    const { id } = await file(t);
    const [row] = await settled([id]);
    expect(row).toMatchObject({ status: 'failed', last_status: 500, last_error: 'the receiver answered HTTP 500' });
    expect(row!.attempts).toBe(r.received.length);
    expect(row!.attempts).toBeGreaterThanOrEqual(2);
    const [span] = await db.sql<{ window_over: boolean }[]>`
      select now() >= created_at + interval '400 milliseconds' as window_over from webhook_outbox where id = ${row!.id}`;
    expect(span?.window_over).toBe(true);
    // A failed row is never claimed again.
    t.worker!.wake();
    expect((await rowsOf([id]))[0]).toMatchObject({ status: 'failed', attempts: row!.attempts });

    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain('gatehouse_webhook_deliveries{endpoint="gives-up",status="failed"} 1');
    expect(metrics.body).toContain('gatehouse_webhook_attempts_total{endpoint="gives-up",outcome="failed"} 1');
    expect(metrics.body).toContain(
      `gatehouse_webhook_attempts_total{endpoint="gives-up",outcome="pending"} ${row!.attempts - 1}`,
    );

    const admin = await t.app.inject({ method: 'GET', url: '/admin/webhooks', headers: bearer(adminToken()) });
    expect(admin.statusCode).toBe(200);
    const view = JSON.parse(admin.body) as { failed: number; endpoints: unknown[]; items: Record<string, unknown>[] };
    expect(view.endpoints).toEqual([
      {
        name: 'gives-up',
        format: 'standard',
        origin: new URL(r.url).origin,
        events: ['approval.created'],
        pending: 0,
        failed: 1,
      },
    ]);
    expect(view.items.find((i) => i.id === row!.id)).toMatchObject({
      status: 'failed',
      endpoint: 'gives-up',
      type: 'approval.created',
      approval_id: id,
      attempts: row!.attempts,
      last_status: 500,
      next_attempt_at: null,
      delivered_at: null,
    });
    expect(admin.body).not.toContain(secret!.slice('whsec_'.length));
    expect(
      (await t.app.inject({ method: 'GET', url: '/admin/webhooks', headers: bearer(approverToken()) })).statusCode,
    ).toBe(403);
  });

  it('housekeeping: an endpoint no longer configured fails after the window; old delivered rows are deleted', async () => {
    // A database of its own: the housekeeping below fails every other endpoint's pending rows.
    const own = await createTestDatabase();
    cleanup.push(() => own.drop());
    const t = await app(
      {
        endpoints: [
          { name: 'removed', url: 'http://127.0.0.1:9/', format: 'slack', secret: null, events: ['approval.created'] },
        ],
        worker: false,
      },
      own,
    );
    const rowsOf = (ids: string[]) => rowsIn(own, ids);
    const { id } = await file(t);
    const outbox = createOutbox(own.sql, { deadlineMs: 5_000 });
    const keep = { keepDeliveredMs: 86_400_000, keepFailedMs: 86_400_000 };
    // Within its window another replica may still deliver it.
    expect((await outbox.housekeep({ names: ['other'], retryForMs: 3_600_000, ...keep })).failed).toEqual([]);
    expect((await outbox.housekeep({ names: ['other'], retryForMs: 1, ...keep })).failed).toEqual([
      { endpoint: 'removed', status: 'failed', count: 1 },
    ]);
    expect((await rowsOf([id]))[0]).toMatchObject({
      status: 'failed',
      last_error: 'no endpoint of this name is configured',
    });

    const old = await file(t);
    const [row] = await rowsOf([old.id]);
    await outbox.delivered(row!.id, 200);
    expect((await outbox.housekeep({ names: ['removed'], retryForMs: 3_600_000, ...keep })).deleted).toBe(0);
    await own.sql`update webhook_outbox set delivered_at = now() - interval '2 days' where id = ${row!.id}`;
    await outbox.housekeep({ names: ['removed'], retryForMs: 3_600_000, ...keep });
    expect(await rowsOf([old.id])).toEqual([]);
    await own.sql`update webhook_outbox set created_at = now() - interval '2 days' where approval_id = ${id}`;
    await outbox.housekeep({ names: ['removed'], retryForMs: 3_600_000, ...keep });
    expect(await rowsOf([id])).toEqual([]);
  });
});

describe('the Slack format', () => {
  it('posts a readable message (what, tool, requester, reason, link), unsigned, every value escaped', async () => {
    const { r } = await receiver(null);
    const t = await app({ endpoints: [endpoint('slack', r, null)] });
    const sub = newSub();
    const { id } = await file(t, sub);
    expect(
      (
        await post(
          t.app,
          `/approvals/${id}/deny`,
          { reason: 'fraud <!channel> & <https://evil.example|click>' },
          approverToken(),
        )
      ).statusCode,
    ).toBe(200);
    await settled([id]);
    const texts = r.delivered().map((w) => (JSON.parse(w.body) as { text: string }).text);
    expect(r.delivered().every((w) => Object.keys(JSON.parse(w.body)).join() === 'text')).toBe(true);
    expect(r.received.every((w) => w.headers['webhook-signature'] === undefined)).toBe(true);
    const link = `<${PUBLIC_URL}/ui#approval=${id}|Open approval ${id}>`;
    expect(texts.find((x) => x.startsWith('*Approval requested*'))).toBe(
      `*Approval requested*: \`refund\` requested by ${sub} (team support, agent bot)\nReason: refund over 100 needs an operator\n${link}`,
    );
    expect(texts.find((x) => x.startsWith('*Approval denied'))).toBe(
      `*Approval denied by operator-1*: \`refund\` requested by ${sub} (team support, agent bot)\nReason: refund over 100 needs an operator\n` +
        `Denial: fraud &lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;\n${link}`,
    );
  });

  it("names the requester by the token's display name beside the sub, escaped", async () => {
    const { r } = await receiver(null);
    const t = await app({ endpoints: [endpoint('slack', r, null)] });
    const sub = newSub();
    const res = await post(
      t.app,
      '/approvals',
      bigRefund(),
      token({ sub, team: 'support', name: 'Refund <Bot> & Co' }),
    );
    expect(res.statusCode, res.body).toBe(201);
    const { id } = JSON.parse(res.body) as { id: string };
    await settled([id]);
    const [text] = r.delivered().map((w) => (JSON.parse(w.body) as { text: string }).text);
    expect(text?.split('\n')[0]).toBe(
      `*Approval requested*: \`refund\` requested by Refund &lt;Bot&gt; &amp; Co (${sub}) (team support, agent bot)`,
    );
  });

  it('without PUBLIC_URL the link is the path, and the message names the approval', async () => {
    const { r } = await receiver(null);
    const t = await app({ endpoints: [endpoint('slack', r, null)], publicUrl: null });
    const { id } = await file(t);
    await settled([id]);
    const [text] = r.delivered().map((w) => (JSON.parse(w.body) as { text: string }).text);
    expect(text?.split('\n').at(-1)).toBe(`Approval ${id} (/ui#approval=${id} on Gatehouse)`);
  });
});

describe('stopping', () => {
  it('close() waits for the attempt in flight and records it; nothing is claimed after', async () => {
    const { r, secret } = await receiver();
    r.delayMs = 300;
    const t = await app({ endpoints: [endpoint('ops', r, secret, { events: ['approval.created'] })] });
    const { id } = await file(t);
    await eventually('the attempt in flight', 10_000, async () => (r.received.length === 1 ? true : undefined));
    expect(r.received[0]!.answered).toBeNull();
    await t.worker!.close();
    expect(r.received[0]!.answered).toBe(204);
    expect((await rowsOf([id]))[0]).toMatchObject({ status: 'delivered', attempts: 1 });
    const later = await file(t);
    t.worker!.wake();
    expect((await rowsOf([later.id]))[0]).toMatchObject({ status: 'pending', attempts: 0 });
    expect(r.received).toHaveLength(1);
  });
});
