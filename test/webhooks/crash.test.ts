// The "done means": the REAL service process (`node dist/main.js serve`) is killed (SIGKILL)
// between a grant and its webhook delivery, with the receiver down; a new process starts on the same
// database, the receiver comes back, and the event arrives, exactly once, signed. The outbox row was
// committed with the grant, so nothing in the killed process's memory was needed.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { approverToken, SECRET, token } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { callJson, ensureBuilt, eventually, freeTcpPort, startServer, type ServerProcess } from '../helpers/process.js';
import { startWebhookReceiver, webhookSecret, type WebhookReceiver } from '../helpers/webhook-receiver.js';

let db: TestDatabase;
let dataDir: string;
const servers: ServerProcess[] = [];
let receiver: WebhookReceiver | null = null;

beforeAll(async () => {
  [db, dataDir] = await Promise.all([
    createTestDatabase(),
    mkdtemp(join(tmpdir(), 'gatehouse-webhooks-crash-')),
    ensureBuilt(),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  await receiver?.close();
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

interface Row {
  id: string;
  type: string;
  status: string;
  attempts: number;
  last_error: string | null;
}
const outbox = (approvalId: string): Promise<Row[]> =>
  db.sql<
    Row[]
  >`select id, type, status, attempts, last_error from webhook_outbox where approval_id = ${approvalId} order by type`.then(
    (r) => [...r],
  );

it('SIGKILL after the grant, before its delivery: a new process delivers it once the receiver is back', async () => {
  const secret = webhookSecret();
  const port = await freeTcpPort(); // nothing listens there yet: the receiver is down
  const env = {
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    JWT_SECRET: SECRET,
    POLICY_DIR: 'test/cases/payments',
    POLICY_ENV: 'prod',
    PUBLIC_URL: 'https://gatehouse.example.com',
    WEBHOOKS: JSON.stringify([{ name: 'ops', url: `http://127.0.0.1:${port}/hooks`, secret }]),
    WEBHOOK_RETRY_MIN: '100ms',
    WEBHOOK_RETRY_MAX: '500ms',
  };
  const first = await startServer(env);
  servers.push(first);
  expect(first.stdout()).toContain('delivering webhooks');
  expect(first.stdout() + first.stderr()).not.toContain(secret.slice('whsec_'.length)); // never printed

  const agent = token({ sub: 'agent-crash', team: 'support', agent: 'bot' });
  const filed = await callJson(first.base, 'POST', '/approvals', agent, {
    tool: 'refund',
    args: { order: 'C-1', amount: 500 },
  });
  expect(filed.status).toBe(201);
  const id = filed.body.id as string;
  const granted = await callJson(first.base, 'POST', `/approvals/${id}/grant`, approverToken(), { note: 'ok' });
  expect(granted.status).toBe(200);
  // The first process tried and could not reach the receiver: the grant's event waits in the outbox.
  await eventually('a refused attempt of the grant event', 20_000, async () => {
    const rows = await outbox(id);
    return rows.find(
      (r) => r.type === 'approval.granted' && r.attempts >= 1 && r.last_error === 'no answer: ECONNREFUSED',
    );
  });
  await first.kill(); // SIGKILL: no shutdown, nothing flushed
  expect(first.proc.signalCode).toBe('SIGKILL');
  expect((await outbox(id)).map((r) => [r.type, r.status])).toEqual([
    ['approval.created', 'pending'],
    ['approval.granted', 'pending'],
  ]);

  const second = await startServer(env);
  servers.push(second);
  receiver = await startWebhookReceiver(secret, port);
  const rows = await eventually('both events delivered', 30_000, async () => {
    const all = await outbox(id);
    return all.length === 2 && all.every((r) => r.status === 'delivered') ? all : undefined;
  });
  const delivered = receiver.delivered();
  expect(delivered).toHaveLength(2); // each once
  expect(receiver.received.every((w) => w.verified === true)).toBe(true);
  expect(delivered.map((w) => w.headers['webhook-id']).sort()).toEqual(rows.map((r) => r.id).sort());
  const grant = delivered
    .map((w) => JSON.parse(w.body) as { type: string; data: Record<string, unknown> })
    .find((e) => e.type === 'approval.granted');
  expect(grant?.data).toMatchObject({
    id,
    status: 'granted',
    decided_by: 'operator-1',
    url: `https://gatehouse.example.com/ui#approval=${id}`,
  });

  // The second process stops cleanly with its worker.
  second.proc.kill('SIGTERM');
  expect((await second.exited(20_000)).code).toBe(0);
});
