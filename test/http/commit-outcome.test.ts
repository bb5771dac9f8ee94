// A commit's outcome is never misreported, through the real app and PostgreSQL (docs/spec.md section
// 5.1): a redeem or a counted call whose COMMIT reached the server but whose answer was lost answers
// what it did (200 allow, consumed or counted once), not 503; a COMMIT held by a dark link answers 504
// `outcome_unknown` by the deadline, while the link is still dark, and is never allow. The link's
// faults come from a TCP proxy between the app and PostgreSQL (test/helpers/pg-proxy.ts).
import { rm } from 'node:fs/promises';
import type { Sql } from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { approverToken, createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { expectProblemJson } from '../helpers/http.js';
import { startPgProxy, type PgProxy } from '../helpers/pg-proxy.js';
import { policyDir } from '../helpers/process.js';

const POLICY = `policy: outcome
tools:
  pay: {kind: remote_mutation}
  refund: {kind: remote_mutation}
rules:
  - {id: pays, tools: pay, allow: true}
  - id: refunds
    tools: refund
    allow: true
    confirm: "amount > 100"
    approval: {kind: big_refund}
budgets:
  - {id: pay-budget, tools: pay, sum: amount, max: 1000, per: day, scope: user}
`;

let db: TestDatabase;
let dir: string;
let proxy: PgProxy;
let admin: Sql;
const opened: { app: TestApp; sql: Sql }[] = [];

beforeAll(async () => {
  [db, dir] = await Promise.all([createTestDatabase(), policyDir({ 'outcome.yaml': POLICY })]);
  proxy = await startPgProxy(db.url);
  admin = createSql(db.url, { max: 2 });
}, 60_000);
afterEach(() => proxy.light());
afterAll(async () => {
  proxy?.light();
  for (const { app, sql } of opened) {
    await app.close().catch(() => undefined);
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
  await proxy?.close();
  await admin?.end({ timeout: 1 });
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** An app whose every connection (pool and lanes) goes through the proxy. */
async function openApp(deadlineMs: number): Promise<TestApp> {
  const options = { connectTimeoutMs: 1_000, reconnectBackoffMaxMs: 100 };
  const sql = createSql(proxy.url, options);
  const app = await createTestApp({
    policyDir: dir,
    env: null,
    deadlineMs,
    lanes: 1,
    laneOptions: options,
    database: { url: proxy.url, sql, drop: async () => undefined },
  });
  opened.push({ app, sql });
  return app;
}

async function counted(sub: string): Promise<string | null> {
  const [row] = await admin<
    { counted: string }[]
  >`select counted::text from budget_counters where budget = 'pay-budget' and scope_key = ${`user:${sub}`}`;
  return row?.counted ?? null;
}

/** Resolves once no session of the database holds an open transaction (a held COMMIT's session ended). */
async function noOpenTransaction(): Promise<void> {
  for (;;) {
    const [row] = await admin<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where datname = current_database() and backend_xid is not null and pid <> pg_backend_pid()`;
    if (row?.n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a counted call', () => {
  it('its COMMIT reached the server and the answer was lost: 200 allow, counted once', async () => {
    const app = await openApp(2_000);
    const agent = token({ sub: 'cut-payer' });
    expect((await post(app.app, '/decide', { tool: 'pay', args: { amount: 1 } }, agent)).statusCode).toBe(200); // connected
    proxy.arm('cut-after-commit');
    const res = await post(app.app, '/decide', { tool: 'pay', args: { amount: 10 } }, agent);
    await proxy.struck();
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ decision: 'allow' });
    expect(await counted('cut-payer')).toBe('11');
  });

  it('its COMMIT held by a dark link: 504 outcome_unknown while still dark, never allow; the late COMMIT is refused', async () => {
    const app = await openApp(1_000);
    const agent = token({ sub: 'dark-payer' });
    expect((await post(app.app, '/decide', { tool: 'pay', args: { amount: 1 } }, agent)).statusCode).toBe(200);
    proxy.arm('dark-before-commit');
    const res = await post(app.app, '/decide', { tool: 'pay', args: { amount: 10 } }, agent);
    expectProblemJson(res, 504, 'outcome_unknown');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(res.body).not.toMatch(/"decision":"allow"/);
    await noOpenTransaction();
    proxy.light();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await counted('dark-payer')).toBe('1');
  });
});

describe('a redeem', () => {
  it('its COMMIT reached the server and the answer was lost: 200 allow, and the approval is consumed', async () => {
    const app = await openApp(2_000);
    const agent = token({ sub: 'cut-redeemer' });
    const call = { tool: 'refund', args: { amount: 500 } };
    const filed = await post(app.app, '/approvals', call, agent);
    expect(filed.statusCode, filed.body).toBe(201);
    const id = filed.json<{ id: string }>().id;
    expect((await post(app.app, `/approvals/${id}/grant`, { note: 'ok' }, approverToken())).statusCode).toBe(200);
    proxy.arm('cut-after-commit');
    const res = await post(app.app, '/decide', { ...call, approval_id: id }, agent);
    await proxy.struck();
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ decision: 'allow' });
    const [row] = await admin<{ status: string }[]>`select status from approvals where id = ${id}`;
    expect(row?.status).toBe('consumed');
  });
});
