// The real service process (`node dist/main.js serve`, DECISION_STORE=postgres) is killed (SIGKILL)
// the moment an answer arrives: the record of a redeem, and of a counted call, is in the store
// anyway, written in the transaction that consumed the grant or counted the call (docs/spec.md
// section 5.10). A queued record would have waited the writer's linger, in the killed memory.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { approverToken, SECRET, token } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { callJson, ensureBuilt, startServer, type ServerProcess } from '../helpers/process.js';

let db: TestDatabase;
let dataDir: string;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  [db, dataDir] = await Promise.all([
    createTestDatabase(),
    mkdtemp(join(tmpdir(), 'gatehouse-records-crash-')),
    ensureBuilt(),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.kill()));
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const serve = async (policyDir: string, env: Record<string, string> = {}): Promise<ServerProcess> => {
  const server = await startServer({
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    JWT_SECRET: SECRET,
    POLICY_DIR: policyDir,
    DECISION_STORE: 'postgres',
    ...env,
  });
  servers.push(server);
  return server;
};

/** SIGKILL now (no grace, no flush), and wait for the process to be gone. */
const killNow = async (server: ServerProcess): Promise<void> => {
  server.proc.kill('SIGKILL');
  expect((await server.exited(10_000)).signal).toBe('SIGKILL');
};

const recorded = (id: string) =>
  db.sql<{ decision: string; approval_id: string | null }[]>`
    select decision, approval_id from decisions where id = ${id}`.then((rows) => [...rows]);

it('SIGKILL right after a redeem is answered: its record is in the store', async () => {
  const server = await serve('test/cases/payments', { POLICY_ENV: 'prod' });
  const agent = token({ sub: 'agent-crash', team: 'support', agent: 'bot' });
  const call = { tool: 'refund', args: { order: 'K-1', amount: 500 } };
  const filed = await callJson(server.base, 'POST', '/approvals', agent, call);
  expect(filed.status).toBe(201);
  const id = filed.body.id as string;
  expect((await callJson(server.base, 'POST', `/approvals/${id}/grant`, approverToken(), {})).status).toBe(200);
  const redeem = await callJson(server.base, 'POST', '/decide', agent, { ...call, approval_id: id });
  await killNow(server);
  expect(redeem.status).toBe(200);
  expect(await recorded(redeem.body.decision_id as string)).toEqual([{ decision: 'allow', approval_id: id }]);
  const [approval] = await db.sql<{ status: string }[]>`select status from approvals where id = ${id}`;
  expect(approval?.status).toBe('consumed');
}, 60_000);

it('SIGKILL right after a counted call is answered: its record is in the store', async () => {
  const server = await serve('test/cases/budgets');
  const agent = token({ sub: 'agent-crash-2', team: 'support', agent: 'bot' });
  const counted = await callJson(server.base, 'POST', '/decide', agent, { tool: 'lookup_order', args: { id: 7 } });
  await killNow(server);
  expect(counted.status).toBe(200);
  expect(await recorded(counted.body.decision_id as string)).toEqual([{ decision: 'allow', approval_id: null }]);
}, 60_000);
