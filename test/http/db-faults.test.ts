// Database faults, end to end through the HTTP app on a real
// PostgreSQL that this file stops, restarts and whose backends it terminates. What must hold:
// - anything that needs the approval store answers 503 + Retry-After (problem+json) within the
//   deadline when the database cannot answer, and recovers by itself when it can again (no rebuild);
// - a call that answered 503 never commits later, and a fault leaves no partial state;
// - /decide without approval_id never touches the database and keeps answering exactly as before;
// - NOTHING ever answers `allow` because of a fault: every response collected here is checked.
// (serve() itself refuses to start when the database is down at boot: see process.test.ts.)
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { LightMyRequestResponse } from 'fastify';
import type { Sql } from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSql, type SqlOptions } from '../../src/db/connect.js';
import { agentToken, approverToken, bearer, createTestApp, post, type TestApp } from '../helpers/app.js';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/db.js';
import { expectProblemJson } from '../helpers/http.js';
import { eventually, policyDir } from '../helpers/process.js';

const POLICY = `policy: faults
version: "1"
tools:
  lookup: {kind: read_only}
  refund: {kind: remote_mutation}
  wipe: {kind: destructive}
rules:
  - id: lookups
    tools: [lookup]
    allow: true
  - id: refunds
    tools: [refund]
    allow: true
    confirm: true
  - id: no-wipe
    tools: [wipe]
    allow: false
`;

let pg: PrivatePostgres;
let dir: string;
/** The test's own session: row locks, pg_stat_activity, pg_terminate_backend, state checks. */
let admin: Sql;
const opened: { app: TestApp; sql: Sql }[] = [];

beforeAll(async () => {
  [pg, dir] = await Promise.all([startPrivatePostgres(), policyDir({ 'faults.yaml': POLICY })]);
  admin = createSql(pg.url, { max: 4, applicationName: 'test-admin', connectTimeoutMs: 2_000 });
}, 60_000);

afterAll(async () => {
  for (const { app, sql } of opened) {
    await app.close().catch(() => undefined);
    await sql.end({ timeout: 1 }).catch(() => undefined);
  }
  await admin?.end({ timeout: 1 });
  await pg?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** An app on the private database with its own pool (named, so the test can find its backends). */
async function openApp(name: string, sqlOptions: SqlOptions, deadlineMs: number): Promise<TestApp> {
  const sql = createSql(pg.url, {
    applicationName: name,
    connectTimeoutMs: 1_000,
    reconnectBackoffMaxMs: 100,
    ...sqlOptions,
  });
  const app = await createTestApp({
    policyDir: dir,
    env: null,
    deadlineMs,
    database: { url: pg.url, sql, drop: async () => undefined },
  });
  opened.push({ app, sql });
  return app;
}

// ---- every response is checked -------------------------------------------------------------------

type Res = LightMyRequestResponse;

/** An approval-store call that could not be served: 503 problem+json with Retry-After, no decision. */
function expectUnavailable(res: Res, what: string, maxMs?: number, ms?: number): void {
  expect(res.statusCode, `${what}: ${res.body.slice(0, 300)}`).toBe(503);
  const problem = expectProblemJson(res, 503, 'unavailable');
  expect(Number(res.headers['retry-after']), `${what}: Retry-After`).toBeGreaterThan(0);
  expect(JSON.stringify(problem)).not.toMatch(/select|update|insert|postgres|ECONN|57P01|55P03|57014/i);
  if (maxMs !== undefined && ms !== undefined) expect(ms, `${what} took ${Math.round(ms)} ms`).toBeLessThan(maxMs);
}

/**
 * A COMMIT in flight when the connection was cut, whose outcome could not be learned in time (the
 * look-up's connection was cut too): 504, never allow (docs/spec.md section 5.1.1).
 */
function expectOutcomeUnknown(res: Res, what: string): void {
  const problem = expectProblemJson(res, 504, 'outcome_unknown');
  expect(Number(res.headers['retry-after']), `${what}: Retry-After`).toBeGreaterThan(0);
  expect(JSON.stringify(problem)).not.toMatch(/select|update|insert|postgres|ECONN|57P01/i);
}

/** Never `allow` unless `allowed` says this request may be allowed (a lookup, or redeeming a real grant). */
function expectNotAllowedByFault(res: Res, what: string, allowed = false): void {
  const body =
    res.body.length > 0 && res.headers['content-type']?.toString().includes('json')
      ? (res.json() as Record<string, unknown>)
      : {};
  if (!allowed) {
    expect(body.decision, what).not.toBe('allow');
    expect(res.statusCode === 200 && body.decision === 'allow', what).toBe(false);
  }
  expect(res.statusCode, `${what}: ${res.body.slice(0, 200)}`).not.toBe(500);
}

async function timed(fn: () => Promise<Res>): Promise<{ res: Res; ms: number }> {
  const started = performance.now();
  const res = await fn();
  return { res, ms: performance.now() - started };
}

/**
 * /decide WITHOUT approval_id, continuously, while a fault is on: every answer must be exactly the
 * policy's (lookup allow, refund require_approval, wipe deny), never a 5xx, never slower than 1 s.
 */
function decideContinuously(app: TestApp): { stop(): Promise<number> } {
  let running = true;
  let count = 0;
  const failures: string[] = [];
  const want: Record<string, [number, string, string]> = {
    lookup: [200, 'allow', 'lookups'],
    refund: [403, 'require_approval', 'refunds'],
    wipe: [403, 'deny', 'no-wipe'],
  };
  const loop = (async () => {
    const tools = Object.keys(want);
    while (running) {
      const tool = tools[count % tools.length]!;
      const started = performance.now();
      const res = await post(app.app, '/decide', { tool, args: { n: count } });
      const ms = performance.now() - started;
      const [status, decision, rule] = want[tool]!;
      const body = res.json() as Record<string, unknown>;
      if (res.statusCode !== status || body.decision !== decision || body.rule !== rule || ms > 1000) {
        failures.push(`${tool}: ${res.statusCode} ${res.body.slice(0, 200)} in ${Math.round(ms)} ms`);
      }
      count++;
      await new Promise((resolve) => setTimeout(resolve, 5));
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

// ---- approvals and database state -------------------------------------------------------------------

const agentSub = (): string => `agent-${randomUUID().slice(0, 8)}`;
const refund = (n: number | string = randomUUID()): { tool: string; args: Record<string, unknown> } => ({
  tool: 'refund',
  args: { order: String(n) },
});

async function createApproval(
  app: TestApp,
  sub: string,
  body = refund(),
): Promise<{ id: string; hash: string; body: typeof body }> {
  const res = await post(app.app, '/approvals', body, agentToken(sub));
  expect(res.statusCode, res.body).toBe(201);
  const a = res.json() as { id: string; hash: string; status: string };
  expect(a.status).toBe('pending');
  return { id: a.id, hash: a.hash, body };
}

const grant = (app: TestApp, id: string): Promise<Res> =>
  post(app.app, `/approvals/${id}/grant`, { note: 'ok' }, approverToken());
const deny = (app: TestApp, id: string): Promise<Res> =>
  post(app.app, `/approvals/${id}/deny`, { reason: 'no' }, approverToken());
const redeem = (
  app: TestApp,
  sub: string,
  body: { tool: string; args: Record<string, unknown> },
  id: string,
): Promise<Res> => post(app.app, '/decide', { ...body, approval_id: id }, agentToken(sub));

interface RowState {
  status: string;
  decided_by: string | null;
  consumed_at: Date | null;
  events: { to_status: string }[];
}

async function stateOf(id: string): Promise<RowState> {
  const [row] = await admin<{ status: string; decided_by: string | null; consumed_at: Date | null }[]>`
    select status, decided_by, consumed_at from approvals where id = ${id}`;
  const events = await admin<
    { to_status: string }[]
  >`select to_status from approval_events where approval_id = ${id} order by id`;
  return { ...row!, events: [...events] };
}

/** Holds FOR UPDATE locks on these approval rows from the test's own session until release(). */
async function lockRows(ids: string[]): Promise<{ release(): Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked!: () => void;
  const holding = new Promise<void>((resolve) => (locked = resolve));
  const tx = admin.begin(async (t) => {
    await t`select id from approvals where id in ${t(ids)} for update`;
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

/** The backend pids of this app's pool that wait on a lock. */
async function lockWaiters(applicationName: string): Promise<number[]> {
  const rows = await admin<{ pid: number }[]>`
    select pid from pg_stat_activity where application_name = ${applicationName} and wait_event_type = 'Lock'`;
  return rows.map((r) => r.pid);
}

// In the real process an uncaught exception or an unhandled rejection ends Gatehouse (and /decide
// with it): a database fault must never produce one. (postgres.js 3.4.9 did, twice: see
// src/db/deadline.ts and the fetch_types note in src/db/connect.ts.)
const escaped: unknown[] = [];
const onEscape = (err: unknown): void => {
  escaped.push(err);
};
beforeAll(() => {
  process.on('uncaughtException', onEscape);
  process.on('unhandledRejection', onEscape);
});
afterAll(() => {
  process.off('uncaughtException', onEscape);
  process.off('unhandledRejection', onEscape);
});

afterEach(async () => {
  // A test that failed half-way must not leave the server stopped for the next one.
  await pg.start();
  // Late errors of a test's faults (a deferred write on a dead socket) surface within a few ticks.
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(escaped.splice(0).map(String)).toEqual([]);
});

// ---------------------------------------------------------------------------------------------------

describe('database faults', () => {
  it('down at start: approval routes are 503 + Retry-After within the deadline, /decide keeps answering; the same app recovers when the database starts', async () => {
    await pg.stop();
    const app = await openApp('gh-down', {}, 1_000);
    const decider = decideContinuously(app);
    const sub = agentSub();
    const someId = randomUUID();
    const calls: [string, () => Promise<Res>][] = [
      ['create', () => post(app.app, '/approvals', refund(1), agentToken(sub))],
      ['get', () => app.app.inject({ method: 'GET', url: `/approvals/${someId}`, headers: bearer(agentToken(sub)) })],
      [
        'get ?wait',
        () => app.app.inject({ method: 'GET', url: `/approvals/${someId}?wait=5`, headers: bearer(agentToken(sub)) }),
      ],
      [
        'list',
        () => app.app.inject({ method: 'GET', url: '/approvals?status=pending', headers: bearer(approverToken()) }),
      ],
      ['grant', () => grant(app, someId)],
      ['deny', () => deny(app, someId)],
      ['redeem', () => redeem(app, sub, refund(1), someId)],
    ];
    for (let round = 0; round < 3; round++) {
      for (const [what, call] of calls) {
        const { res, ms } = await timed(call);
        expectUnavailable(res, what, 1_000 + 1_500, ms);
        expectNotAllowedByFault(res, what);
      }
    }
    // approval_id on a request the policy decides without an approval: the database is not needed.
    const lookup = await post(app.app, '/decide', { tool: 'lookup', args: {}, approval_id: someId }, agentToken(sub));
    expect(lookup.statusCode).toBe(200);
    const wipe = await post(app.app, '/decide', { tool: 'wipe', args: {}, approval_id: someId }, agentToken(sub));
    expect(wipe.statusCode).toBe(403);
    expectNotAllowedByFault(wipe, 'wipe with approval_id');

    const notReady = await app.app.inject({ method: 'GET', url: '/readyz' });
    expect(notReady.statusCode).toBe(503);
    expect(notReady.json()).toMatchObject({ status: 'not_ready', database: 'unavailable' });
    expect((await app.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);

    await pg.start();
    const created = await eventually('the app to create approvals again', 15_000, async () => {
      const res = await post(app.app, '/approvals', refund(1), agentToken(sub));
      expectNotAllowedByFault(res, 'create during recovery');
      if (res.statusCode === 503) return undefined;
      return res;
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = (created.json() as { id: string }).id;
    expect((await app.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    expect((await grant(app, id)).statusCode).toBe(200);
    const redeemed = await redeem(app, sub, refund(1), id);
    expect(redeemed.statusCode).toBe(200); // allowed by an operator's grant, on a healthy database
    expect(redeemed.json()).toMatchObject({ decision: 'allow', approval: { id, status: 'consumed' } });
    expect(await decider.stop()).toBeGreaterThan(10);
  });

  it('a grant whose backend is terminated before COMMIT: 503, the approval stays pending, the retry succeeds', async () => {
    const name = 'gh-terminate';
    const app = await openApp(name, { lockTimeoutMs: 10_000, statementTimeoutMs: 10_000 }, 5_000);
    const decider = decideContinuously(app);
    const sub = agentSub();
    const { id, body } = await createApproval(app, sub);

    const lock = await lockRows([id]);
    const pending = timed(() => grant(app, id));
    const [pid] = await eventually('the grant to wait on the row lock', 5_000, async () => {
      const pids = await lockWaiters(name);
      return pids.length > 0 ? pids : undefined;
    });
    await admin`select pg_terminate_backend(${pid!})`;
    const { res, ms } = await pending;
    expectUnavailable(res, 'grant of a terminated backend', 5_000, ms);
    expectNotAllowedByFault(res, 'grant of a terminated backend');
    await lock.release();

    const after = await stateOf(id);
    expect(after.status).toBe('pending');
    expect(after.decided_by).toBeNull();
    expect(after.events.map((e) => e.to_status)).toEqual(['pending']);
    // Before the grant: a redeem is not allowed.
    const early = await redeem(app, sub, body, id);
    expect(early.statusCode).toBe(403);
    expectNotAllowedByFault(early, 'redeem of a pending approval');

    const retried = await eventually('the retried grant', 5_000, async () => {
      const r = await grant(app, id);
      return r.statusCode === 503 ? undefined : r;
    });
    expect(retried.statusCode, retried.body).toBe(200);
    expect((await stateOf(id)).events.map((e) => e.to_status)).toEqual(['pending', 'granted']);
    expect(await decider.stop()).toBeGreaterThan(5);
  });

  it('pool exhausted by pg_sleep holders: 100 grants each 503 + Retry-After within the deadline, and none commits later', async () => {
    const name = 'gh-pool';
    const DEADLINE = 1_000;
    const app = await openApp(name, { max: 4 }, DEADLINE);
    const { sql } = opened.at(-1)!;
    const sub = agentSub();
    const approvals = await Promise.all(
      Array.from({ length: 100 }, (_, i) => createApproval(app, sub, refund(`pool-${i}`))),
    );
    const ids = approvals.map((a) => a.id);

    const holders = Array.from({ length: 4 }, () => sql`select pg_sleep(3)`.execute());
    await eventually('4 pg_sleep holders on the pool', 5_000, async () => {
      const [row] = await admin<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity where application_name = ${name} and query like '%pg_sleep%' and state = 'active'`;
      return row!.n === 4 ? true : undefined;
    });
    const decider = decideContinuously(app);
    const started = performance.now();
    const [grants, others] = await Promise.all([
      Promise.all(ids.map((id) => timed(() => grant(app, id)))),
      Promise.all([
        timed(() => redeem(app, sub, approvals[0]!.body, ids[0]!)),
        timed(() => deny(app, ids[1]!)),
        timed(() => post(app.app, '/approvals', refund('pool-new'), agentToken(sub))),
        timed(() => app.app.inject({ method: 'GET', url: `/approvals/${ids[2]}`, headers: bearer(agentToken(sub)) })),
      ]),
    ]);
    // All answered while the holders still sleep: nothing waited for a connection beyond the deadline.
    expect(performance.now() - started).toBeLessThan(2_900);
    for (const { res, ms } of [...grants, ...others]) {
      expectUnavailable(res, 'call on an exhausted pool', DEADLINE + 1_000, ms);
      expectNotAllowedByFault(res, 'call on an exhausted pool');
    }
    expect(await decider.stop()).toBeGreaterThan(3);

    await Promise.all(holders);
    // Every abandoned transaction queued behind the holders has had its turn once these have run.
    await Promise.all(Array.from({ length: 8 }, () => sql`select 1`));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const [moved] = await admin<
      { n: number }[]
    >`select count(*)::int as n from approvals where id in ${admin(ids)} and status <> 'pending'`;
    const [decided] = await admin<{ n: number }[]>`
      select count(*)::int as n from approval_events where approval_id in ${admin(ids)} and to_status <> 'pending'`;
    expect(moved!.n).toBe(0);
    expect(decided!.n).toBe(0);
    const [created] = await admin<
      { n: number }[]
    >`select count(*)::int as n from approvals where requester_sub = ${sub}`;
    expect(created!.n).toBe(100); // the create that answered 503 did not insert either

    // The pool is healthy again: the same app grants.
    expect((await grant(app, ids[0]!)).statusCode).toBe(200);
  });

  it('lock_timeout and statement_timeout: grant, deny and redeem answer 503 quickly, with no partial state', async () => {
    const lockApp = await openApp('gh-lock-timeout', { lockTimeoutMs: 200, statementTimeoutMs: 10_000 }, 5_000);
    const stmtApp = await openApp('gh-statement-timeout', { lockTimeoutMs: 10_000, statementTimeoutMs: 200 }, 5_000);
    const decider = decideContinuously(lockApp);
    const sub = agentSub();
    const pending = await createApproval(lockApp, sub);
    const granted = await createApproval(lockApp, sub);
    expect((await grant(lockApp, granted.id)).statusCode).toBe(200);
    const before = await Promise.all([stateOf(pending.id), stateOf(granted.id)]);

    const lock = await lockRows([pending.id, granted.id]);
    try {
      for (const app of [lockApp, stmtApp]) {
        for (const [what, call] of [
          ['grant', () => grant(app, pending.id)],
          ['deny', () => deny(app, pending.id)],
          ['redeem', () => redeem(app, sub, granted.body, granted.id)],
        ] as const) {
          const { res, ms } = await timed(call);
          // Well inside the 5 s deadline: the server-side timeout answered, not the deadline.
          expectUnavailable(res, what, 2_500, ms);
          expectNotAllowedByFault(res, what);
        }
      }
    } finally {
      await lock.release();
    }
    expect(await Promise.all([stateOf(pending.id), stateOf(granted.id)])).toEqual(before);

    const redeemed = await redeem(lockApp, sub, granted.body, granted.id);
    expect(redeemed.statusCode).toBe(200);
    expect((await grant(stmtApp, pending.id)).statusCode).toBe(200);
    expect(await decider.stop()).toBeGreaterThan(3);
  });

  it('connection resets: every backend terminated repeatedly under traffic → only valid answers, 503 or 504, then recovery without restart', async () => {
    const name = 'gh-reset';
    const app = await openApp(name, { max: 4, lockTimeoutMs: 5_000 }, 3_000);
    const decider = decideContinuously(app);
    const sub = agentSub();
    const seeded = await Promise.all(
      Array.from({ length: 20 }, (_, i) => createApproval(app, sub, refund(`reset-${i}`))),
    );
    // One row stays locked, so grants on it are always in flight when the backends are cut.
    const lock = await lockRows([seeded[0]!.id]);

    let running = true;
    const answers: { what: string; res: Res; id?: string }[] = [];
    const worker = async (w: number): Promise<void> => {
      for (let i = 0; running; i++) {
        const target = seeded[(w * 7 + i) % seeded.length]!;
        const op = (w + i) % 4;
        if (op === 0) answers.push({ what: 'grant', id: target.id, res: await grant(app, target.id) });
        else if (op === 1)
          answers.push({ what: 'grant-locked', id: seeded[0]!.id, res: await grant(app, seeded[0]!.id) });
        else if (op === 2)
          answers.push({
            what: 'create',
            res: await post(app.app, '/approvals', refund(`reset-new-${w}-${i}`), agentToken(sub)),
          });
        else answers.push({ what: 'redeem', id: target.id, res: await redeem(app, sub, target.body, target.id) });
      }
    };
    const workers = Array.from({ length: 6 }, (_, w) => worker(w));
    let kills = 0;
    for (const stopAt = Date.now() + 1_500; Date.now() < stopAt; ) {
      const killed =
        await admin`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${name}`;
      kills += killed.length;
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    running = false;
    await lock.release();
    await Promise.all(workers);
    expect(kills).toBeGreaterThan(0);

    let unavailable = 0;
    const grantedOk = new Set<string>();
    for (const { what, res, id } of answers) {
      expectNotAllowedByFault(res, what, what === 'redeem' && res.statusCode === 200);
      if (res.statusCode === 503) {
        unavailable++;
        expectUnavailable(res, what);
      } else if (res.statusCode === 504) {
        expectOutcomeUnknown(res, what);
      } else if (what.startsWith('grant')) {
        expect([200, 409], res.body).toContain(res.statusCode);
        if (res.statusCode === 200) grantedOk.add(id!);
      } else if (what === 'create') {
        expect([200, 201], res.body).toContain(res.statusCode);
      } else {
        expect([200, 403], res.body).toContain(res.statusCode);
        // A redeem answers allow only for an approval the database shows granted (and now consumed).
        if (res.statusCode === 200) expect((await stateOf(id!)).status).toBe('consumed');
      }
    }
    expect(unavailable).toBeGreaterThan(0);
    // Every grant that answered 200 is durable; no approval was decided twice.
    for (const id of grantedOk) expect(['granted', 'consumed']).toContain((await stateOf(id)).status);
    for (const { id } of seeded) {
      const s = await stateOf(id);
      expect(s.events.filter((e) => e.to_status === 'granted').length).toBeLessThanOrEqual(1);
      expect(s.events.at(-1)?.to_status).toBe(s.status);
    }

    // Recovery, same app, same pool: a burst of calls all succeed within a few seconds.
    await eventually('a clean burst after the resets', 5_000, async () => {
      const burst = await Promise.all(
        Array.from({ length: 10 }, (_, i) => post(app.app, '/approvals', refund(`after-${i}`), agentToken(sub))),
      );
      return burst.every((r) => r.statusCode === 201 || r.statusCode === 200) ? true : undefined;
    });
    expect(await decider.stop()).toBeGreaterThan(5);
  });

  it('the server stopped mid-traffic and started again: 503s meanwhile, then the same app works', async () => {
    const app = await openApp('gh-restart', {}, 1_000);
    const decider = decideContinuously(app);
    const sub = agentSub();
    const { id, body } = await createApproval(app, sub);
    let running = true;
    const answers: Res[] = [];
    const traffic = (async () => {
      while (running) {
        answers.push(await post(app.app, '/approvals', refund(`restart-${answers.length}`), agentToken(sub)));
        answers.push(await redeem(app, sub, body, id));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 100));
    await pg.stop();
    // Stay down until the traffic has met the outage: a fixed pause could fall between two calls
    // of a loop slowed by a loaded machine, and then nothing would have been tested.
    await eventually('a 503 while the database is down', 10_000, async () =>
      answers.some((r) => r.statusCode === 503) ? true : undefined,
    );
    await pg.start();
    await eventually('creates to succeed again', 10_000, async () => {
      const r = await post(app.app, '/approvals', refund('restart-probe'), agentToken(sub));
      return r.statusCode === 503 ? undefined : r;
    });
    running = false;
    await traffic;
    let unavailable = 0;
    for (const res of answers) {
      expectNotAllowedByFault(res, 'during the restart');
      if (res.statusCode === 503) {
        unavailable++;
        expectUnavailable(res, 'during the restart');
      } else if (res.statusCode === 504) {
        expectOutcomeUnknown(res, 'during the restart');
      } else {
        expect([200, 201, 403], res.body).toContain(res.statusCode);
      }
    }
    expect(unavailable).toBeGreaterThan(0);
    expect((await stateOf(id)).status).toBe('pending');
    expect((await grant(app, id)).statusCode).toBe(200);
    expect((await redeem(app, sub, body, id)).statusCode).toBe(200);
    expect(await decider.stop()).toBeGreaterThan(5);
  });

  it('killed right after a grant commits: the 200 grant survives the crash, a retry is 409, the redeem works', async () => {
    const app = await openApp('gh-crash', {}, 1_000);
    const sub = agentSub();
    const { id, body } = await createApproval(app, sub);
    expect((await grant(app, id)).statusCode).toBe(200);
    await pg.crash(); // SIGKILL: no shutdown checkpoint, the WAL is replayed at the next start
    const during = await redeem(app, sub, body, id);
    expectNotAllowedByFault(during, 'while the database is dead');
    expectUnavailable(during, 'while the database is dead');
    await pg.start();
    const state = await eventually('the database to answer after the crash', 10_000, async () =>
      stateOf(id).catch(() => undefined),
    );
    expect(state.status).toBe('granted');
    expect(state.events.filter((e) => e.to_status === 'granted')).toHaveLength(1);
    const again = await eventually('the grant route to answer', 10_000, async () => {
      const r = await grant(app, id);
      return r.statusCode === 503 ? undefined : r;
    });
    expect(again.statusCode).toBe(409);
    expect((await redeem(app, sub, body, id)).statusCode).toBe(200);
  });
});
