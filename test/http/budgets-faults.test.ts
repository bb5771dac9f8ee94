// Database faults on counted calls (docs/spec.md section 2.9): when PostgreSQL cannot answer within
// DB_DEADLINE_MS, a call budgets or rate limits select answers 503 with Retry-After, is never
// allowed, and is never counted later (src/db/deadline.ts: the abandoned transaction rolls back);
// calls no budget selects keep being answered as always, without the database.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { LightMyRequestResponse } from 'fastify';
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql, type SqlOptions } from '../../src/db/connect.js';
import { createTestApp, post, token, type TestApp } from '../helpers/app.js';
import { createTestDatabase, startPrivatePostgres, type TestDatabase } from '../helpers/db.js';
import { expectProblemJson } from '../helpers/http.js';
import { eventually, policyDir } from '../helpers/process.js';

const POLICY = `policy: faults
tools:
  pay: {kind: remote_mutation}
  ping: {kind: remote_mutation}
  lookup: {kind: read_only}
  wipe: {kind: destructive}
rules:
  - {id: pays, tools: [pay, ping], allow: true}
  - {id: lookups, tools: lookup, allow: true}
budgets:
  - {id: pay-budget, tools: pay, sum: amount, max: 1000, per: day, scope: user}
rate_limits:
  - {id: ping-rate, tools: ping, calls: 1000, per: 3600, scope: user}
`;

let db: TestDatabase;
let dir: string;
/** The test's own session: row locks, pg_stat_activity, state checks. */
let admin: Sql;
const opened: { app: TestApp; sql: Sql }[] = [];

beforeAll(async () => {
  [db, dir] = await Promise.all([createTestDatabase(), policyDir({ 'faults.yaml': POLICY })]);
  admin = createSql(db.url, { max: 4, applicationName: 'budget-faults-admin' });
}, 60_000);

afterAll(async () => {
  for (const { app, sql } of opened) {
    await app.close().catch(() => undefined);
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
  await admin?.end({ timeout: 1 });
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** An app with its own pool and lanes (the counters' connections), named so the test finds their backends. */
async function openApp(
  name: string,
  url: string,
  sqlOptions: SqlOptions,
  deadlineMs: number,
  lanes: number | false = 4,
): Promise<TestApp> {
  const options = { applicationName: name, connectTimeoutMs: 1_000, reconnectBackoffMaxMs: 100, ...sqlOptions };
  const sql = createSql(url, options);
  const app = await createTestApp({
    policyDir: dir,
    env: null,
    deadlineMs,
    lanes,
    laneOptions: options,
    database: { url, sql, drop: async () => undefined },
  });
  opened.push({ app, sql });
  return app;
}

function expectUnavailable(res: LightMyRequestResponse, what: string): void {
  expect(res.statusCode, `${what}: ${res.body.slice(0, 300)}`).toBe(503);
  expectProblemJson(res, 503, 'unavailable');
  expect(Number(res.headers['retry-after']), `${what}: Retry-After`).toBeGreaterThan(0);
  expect(res.body).not.toMatch(/"decision":"allow"/);
}

/** Calls no budget selects, answered continuously while a fault is on: always the policy's answer, never slower than 1 s. */
function uncountedContinuously(app: TestApp): { stop(): Promise<number> } {
  let running = true;
  let count = 0;
  const failures: string[] = [];
  const loop = (async () => {
    while (running) {
      const lookup = count % 2 === 0;
      const started = performance.now();
      const res = await post(
        app.app,
        '/decide',
        { tool: lookup ? 'lookup' : 'wipe', args: { n: count } },
        token({ sub: 'watcher' }),
      );
      const ms = performance.now() - started;
      const want = lookup ? 200 : 403;
      if (res.statusCode !== want || ms > 1000)
        failures.push(`${res.statusCode} ${res.body.slice(0, 120)} in ${Math.round(ms)} ms`);
      count++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      expect(failures).toEqual([]);
      return count;
    },
  };
}

async function counted(sub: string): Promise<string | null> {
  const [row] = await admin<
    { counted: string }[]
  >`select counted::text from budget_counters where budget = 'pay-budget' and scope_key = ${`user:${sub}`}`;
  return row?.counted ?? null;
}

async function pings(sub: string): Promise<number> {
  const [row] = await admin<
    { n: number }[]
  >`select cardinality(times) as n from rate_limit_calls where rate_limit = 'ping-rate' and scope_key = ${`user:${sub}`}`;
  return row?.n ?? 0;
}

/** Holds FOR UPDATE locks on the caller's counters from the test's own session until release(). */
async function lockCounters(sub: string): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked!: () => void;
  const holding = new Promise<void>((resolve) => (locked = resolve));
  const tx = admin.begin(async (t) => {
    await t`select 1 from budget_counters where scope_key = ${`user:${sub}`} for update`;
    await t`select 1 from rate_limit_calls where scope_key = ${`user:${sub}`} for update`;
    locked();
    await released;
  });
  await holding;
  return {
    async release() {
      release();
      await tx;
    },
  };
}

describe('database faults on counted calls', () => {
  it('a counter locked past DB_DEADLINE_MS: 503 + Retry-After, and once the lock is gone the call still never counts', async () => {
    const app = await openApp('budget-lock', db.url, { lockTimeoutMs: 10_000, statementTimeoutMs: 10_000 }, 500);
    const sub = `agent-${randomUUID().slice(0, 8)}`;
    const tok = token({ sub });
    // Rows to lock: one counted call each.
    expect((await post(app.app, '/decide', { tool: 'pay', args: { amount: 10 } }, tok)).statusCode).toBe(200);
    expect((await post(app.app, '/decide', { tool: 'ping' }, tok)).statusCode).toBe(200);
    const watcher = uncountedContinuously(app);
    const lock = await lockCounters(sub);
    try {
      const waited = await Promise.all([
        post(app.app, '/decide', { tool: 'pay', args: { amount: 20 } }, tok),
        post(app.app, '/decide', { tool: 'ping' }, tok),
        post(app.app, '/approvals', { tool: 'pay', args: { amount: 30 } }, tok),
      ]);
      for (const res of waited) expectUnavailable(res, 'a call whose counter is locked');
      // The abandoned transactions still wait on the lock, behind it.
      const [row] = await admin<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where application_name = 'budget-lock' and wait_event_type = 'Lock'`;
      expect(row!.n).toBeGreaterThan(0);
    } finally {
      await lock.release();
    }
    // They get the rows now, find themselves abandoned and roll back: the counters are as before.
    await eventually('the abandoned transactions to finish', 5_000, async () => {
      const [row] = await admin<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where application_name = 'budget-lock' and state = 'idle in transaction'`;
      return row!.n === 0 ? true : undefined;
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(await counted(sub)).toBe('10');
    expect(await pings(sub)).toBe(1);
    expect(await watcher.stop()).toBeGreaterThan(3);
    // And the same app counts again.
    expect((await post(app.app, '/decide', { tool: 'pay', args: { amount: 20 } }, tok)).statusCode).toBe(200);
    expect(await counted(sub)).toBe('30');
  });

  it('every lane busy on a locked counter: the calls queued behind it 503 at the deadline, never sent; the one running rolls back', async () => {
    const app = await openApp('budget-lanes', db.url, { lockTimeoutMs: 10_000, statementTimeoutMs: 10_000 }, 600, 1);
    const blocked = `agent-${randomUUID().slice(0, 8)}`;
    expect(
      (await post(app.app, '/decide', { tool: 'pay', args: { amount: 10 } }, token({ sub: blocked }))).statusCode,
    ).toBe(200);
    const lock = await lockCounters(blocked);
    const others = Array.from({ length: 20 }, () => `agent-${randomUUID().slice(0, 8)}`);
    try {
      // The one lane's transaction waits on the lock; every other call waits for the lane.
      const first = post(app.app, '/decide', { tool: 'pay', args: { amount: 20 } }, token({ sub: blocked }));
      await eventually('the lane to wait on the lock', 5_000, async () => {
        const [row] = await admin<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity where application_name = 'budget-lanes' and wait_event_type = 'Lock'`;
        return row!.n > 0 ? true : undefined;
      });
      const queued = await Promise.all(
        others.map((sub) => post(app.app, '/decide', { tool: 'pay', args: { amount: 1 } }, token({ sub }))),
      );
      for (const res of [await first, ...queued]) expectUnavailable(res, 'a call behind a busy lane');
    } finally {
      await lock.release();
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(await counted(blocked)).toBe('10');
    for (const sub of others) expect(await counted(sub)).toBeNull();
    // The lane is free again.
    expect(
      (await post(app.app, '/decide', { tool: 'pay', args: { amount: 1 } }, token({ sub: others[0]! }))).statusCode,
    ).toBe(200);
    expect(await counted(others[0]!)).toBe('1');
  });

  it('a pool exhausted by pg_sleep holders (counted calls in transactions of the pool): 50 calls each 503 within the deadline, none counted later', async () => {
    const name = 'budget-pool';
    const DEADLINE = 800;
    const app = await openApp(name, db.url, { max: 3 }, DEADLINE, false);
    const { sql } = opened.at(-1)!;
    const sub = `agent-${randomUUID().slice(0, 8)}`;
    const tok = token({ sub });
    const holders = Array.from({ length: 3 }, () => sql`select pg_sleep(2.5)`.execute());
    await eventually('3 pg_sleep holders on the pool', 5_000, async () => {
      const [row] = await admin<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where application_name = ${name} and query like '%pg_sleep%' and state = 'active'`;
      return row!.n === 3 ? true : undefined;
    });
    const watcher = uncountedContinuously(app);
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        post(app.app, '/decide', i % 2 === 0 ? { tool: 'pay', args: { amount: 1 } } : { tool: 'ping' }, tok),
      ),
    );
    expect(performance.now() - started).toBeLessThan(2_400); // all answered while the holders still sleep
    for (const res of answers) expectUnavailable(res, 'a counted call on an exhausted pool');
    expect(await watcher.stop()).toBeGreaterThan(3);
    await Promise.all(holders);
    // Every abandoned transaction queued behind the holders has had its turn once these have run.
    await Promise.all(Array.from({ length: 6 }, () => sql`select 1`));
    await new Promise((r) => setTimeout(r, 200));
    expect(await counted(sub)).toBeNull();
    expect(await pings(sub)).toBe(0);
    expect((await post(app.app, '/decide', { tool: 'pay', args: { amount: 1 } }, tok)).statusCode).toBe(200);
    expect(await counted(sub)).toBe('1');
  });

  it('the database down: counted calls are 503 within the deadline, the others answered as always; counting resumes when it is back', async () => {
    const pg = await startPrivatePostgres();
    try {
      const app = await openApp('budget-down', pg.url, {}, 1_000);
      const tok = token({ sub: 'agent-down' });
      expect((await post(app.app, '/decide', { tool: 'pay', args: { amount: 5 } }, tok)).statusCode).toBe(200);
      await pg.stop();
      const watcher = uncountedContinuously(app);
      for (const body of [{ tool: 'pay', args: { amount: 5 } }, { tool: 'ping' }]) {
        const started = performance.now();
        const res = await post(app.app, '/decide', body, tok);
        expectUnavailable(res, `${body.tool} with the database down`);
        expect(performance.now() - started).toBeLessThan(2_500);
      }
      await new Promise((r) => setTimeout(r, 300)); // the others keep being answered meanwhile
      expect(await watcher.stop()).toBeGreaterThan(3);
      await pg.start();
      const back = await eventually('counting to resume', 15_000, async () => {
        const res = await post(app.app, '/decide', { tool: 'pay', args: { amount: 5 } }, tok);
        expect(res.statusCode === 503 || res.statusCode === 200, res.body).toBe(true);
        return res.statusCode === 200 ? res : undefined;
      });
      expect(back.json()).toMatchObject({ decision: 'allow' });
      const check = createSql(pg.url, { max: 1 });
      const [row] = await check<
        { counted: string }[]
      >`select counted::text from budget_counters where scope_key = 'user:agent-down'`;
      await check.end();
      expect(row?.counted).toBe('10');
    } finally {
      await pg.dispose();
    }
  }, 90_000);
});
