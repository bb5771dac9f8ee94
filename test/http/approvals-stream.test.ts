// GET /approvals/stream against a real PostgreSQL: every change of an approval reaches the open
// streams of every replica (two app instances on one database), each caller sees what a list would
// show it (approvers everything, a requester its own, never the note), a lost LISTEN connection
// says `reset`, the caps hold, and the stream ends with the server.
import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { approverToken, createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { listenLoopback } from '../helpers/http.js';
import { openStream, type SseEvent, type SseStream } from '../helpers/sse.js';

let a: TestApp; // the replica the streams are open on
let b: TestApp; // another replica, with its own pool (and LISTEN connection) on the same database
let pool: Sql;
let base: string;
beforeAll(async () => {
  a = await createTestApp({ database: true });
  pool = createSql(a.db!.url);
  b = await createTestApp({ database: { url: a.db!.url, sql: pool, drop: async () => {} } });
  base = `http://127.0.0.1:${await listenLoopback(a.app)}`;
});
afterAll(async () => {
  await b?.close();
  await pool?.end();
  await a?.close();
});

const agent = (sub: string): string => token({ sub, team: 'support', agent: 'bot' });
const refund = (order: string) => ({ tool: 'refund', args: { order, amount: 300 } });
const approvalOf = (
  e: SseEvent,
): {
  id: string;
  status: string;
  decision_note: string | null;
  decision_message: string | null;
  requester: { sub: string };
} => JSON.parse(e.data);
const about = (id: string, status: string) => (e: SseEvent) =>
  e.event === 'approval' && approvalOf(e).id === id && approvalOf(e).status === status;

async function ready(s: SseStream): Promise<void> {
  expect(s.status).toBe(200);
  await s.next((e) => e.event === 'ready');
}

describe('the stream', () => {
  it('shows an approver every approval as it is filed, granted, denied, consumed and cancelled on another replica', async () => {
    const s = await openStream(`${base}/approvals/stream`, approverToken());
    try {
      await ready(s);
      expect(s.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      expect(s.headers.get('cache-control')).toBe('no-store');
      const sub = `agent-${randomUUID()}`;
      const filed = (await post(b.app, '/approvals', refund('S1'), agent(sub))).json() as { id: string; hash: string };
      expect(approvalOf(await s.next(about(filed.id, 'pending')))).toMatchObject({ requester: { sub } });
      await post(b.app, `/approvals/${filed.id}/grant`, { note: 'checked' }, approverToken());
      expect(approvalOf(await s.next(about(filed.id, 'granted')))).toMatchObject({ decision_note: 'checked' });
      expect((await post(b.app, '/decide', { ...refund('S1'), approval_id: filed.id }, agent(sub))).statusCode).toBe(
        200,
      );
      await s.next(about(filed.id, 'consumed'));

      const second = (await post(b.app, '/approvals', refund('S2'), agent(sub))).json() as { id: string };
      await post(
        b.app,
        `/approvals/${second.id}/deny`,
        { note: 'fraud pattern', message: 'Declined.' },
        approverToken(),
      );
      expect(approvalOf(await s.next(about(second.id, 'denied')))).toMatchObject({
        decision_note: 'fraud pattern',
        decision_message: 'Declined.',
      });
      const third = (await post(b.app, '/approvals', refund('S3'), agent(sub))).json() as { id: string };
      await post(b.app, `/approvals/${third.id}/cancel`, {}, agent(sub));
      await s.next(about(third.id, 'cancelled'));
      // A summary, never the arguments.
      expect(s.events.every((e) => !e.data.includes('"args"'))).toBe(true);
    } finally {
      s.close();
    }
  });

  it('shows a requester its own approvals only, without the note', async () => {
    const mine = `agent-${randomUUID()}`;
    const s = await openStream(`${base}/approvals/stream`, agent(mine));
    try {
      await ready(s);
      const other = (await post(b.app, '/approvals', refund('O1'), agent(`agent-${randomUUID()}`))).json() as {
        id: string;
      };
      const own = (await post(b.app, '/approvals', refund('M1'), agent(mine))).json() as { id: string };
      await post(
        b.app,
        `/approvals/${own.id}/deny`,
        { note: 'do not tell them', message: 'Declined by an operator.' },
        approverToken(),
      );
      const denied = approvalOf(await s.next(about(own.id, 'denied')));
      expect(denied).toMatchObject({ decision_note: null, decision_message: 'Declined by an operator.' });
      expect(s.events.some((e) => e.data.includes(other.id))).toBe(false);
      expect(s.events.some((e) => e.data.includes('do not tell them'))).toBe(false);
    } finally {
      s.close();
    }
  });

  it('says `reset` when the LISTEN connection was lost, and carries on afterwards', async () => {
    const s = await openStream(`${base}/approvals/stream`, approverToken());
    try {
      await ready(s);
      const [killed] = await a.db!.sql<{ n: number }[]>`
        select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
         where datname = current_database() and query ilike 'listen%'`;
      expect(killed!.n).toBeGreaterThan(0);
      await s.next((e) => e.event === 'reset');
      const filed = (await post(b.app, '/approvals', refund('R1'), agent(`agent-${randomUUID()}`))).json() as {
        id: string;
      };
      await s.next(about(filed.id, 'pending'));
    } finally {
      s.close();
    }
  });
});

describe('limits and shutdown', () => {
  it('streams take the places of waits: MAX_WAITS_PER_CALLER per caller (429), MAX_WAITS per replica (503); a closed one frees its place', async () => {
    const capped = await createTestApp({ database: a.db!, maxWaitsPerCaller: 1, maxWaits: 2 });
    try {
      const url = `http://127.0.0.1:${await listenLoopback(capped.app)}/approvals/stream`;
      const first = await openStream(url, approverToken('op-a'));
      await ready(first);
      const refused = await fetch(url, { headers: { authorization: `Bearer ${approverToken('op-a')}` } });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('5');
      const second = await openStream(url, approverToken('op-b'));
      await ready(second);
      expect((await fetch(url, { headers: { authorization: `Bearer ${approverToken('op-c')}` } })).status).toBe(503);
      first.close();
      // The server sees the close when the connection goes: the place comes back then.
      for (let i = 0; i < 200 && capped.ctx.approvals!.feed.size > 1; i++) await new Promise((r) => setTimeout(r, 10));
      expect(capped.ctx.approvals!.feed.size).toBe(1);
      const again = await openStream(url, approverToken('op-a'));
      await ready(again);
      // Streams and long-polls take the same places: op-a holds its one.
      const { id } = (await post(capped.app, '/approvals', refund('W1'), agent('agent-w'))).json() as { id: string };
      const wait = await capped.app.inject({
        method: 'GET',
        url: `/approvals/${id}?wait=5`,
        headers: { authorization: `Bearer ${approverToken('op-a')}` },
      });
      expect(wait.statusCode).toBe(429);
      expect(wait.json()).toMatchObject({ code: 'too_many_waits' });
      again.close();
      second.close();
      // HEAD is no stream: it takes no place (it would outlive its answer).
      for (let i = 0; i < 200 && capped.ctx.approvals!.feed.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
      const head = await fetch(url, { method: 'HEAD', headers: { authorization: `Bearer ${approverToken('op-a')}` } });
      expect(head.status).toBe(404);
      expect(capped.ctx.approvals!.waiter.holds.size).toBe(0);
    } finally {
      await capped.close();
    }
  });

  it('ends with the server: close() ends every open stream', async () => {
    const closing = await createTestApp({ database: a.db! });
    const s = await openStream(
      `http://127.0.0.1:${await listenLoopback(closing.app)}/approvals/stream`,
      approverToken(),
    );
    await ready(s);
    await closing.close();
    await s.ended;
    expect(closing.ctx.approvals!.feed.size).toBe(0);
  });
});
