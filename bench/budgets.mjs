// @ts-check
// Budgeted /decide on the embedded PostgreSQL (docs/spec.md section 2.9), side by side with the
// unbudgeted /decide: the same 298-byte body (a refund under the confirm cap, bench/lib/bodies.mjs),
// the same example policies, and on the budgeted servers one more file that puts a budget on refunds,
// so every allowed answer is one conditional upsert in one transaction (BEGIN, the upsert, COMMIT)
// on a fresh cluster with the server's default settings (fsync and synchronous_commit on). Each of
// the 50 connections is one agent (its own token, its own counters). After a warm-up each, servers
// take turns (A B C D A B C D, each after the previous one has gone idle) at a fixed offered rate,
// open loop (latency from the scheduled time), then at full speed (closed loop):
//   unbudgeted   the example policies, no database
//   budget       + a sum budget per user (one counter per call)
//   hot          + a global budget (every call on one counter row: the single-row ceiling)
//   budget+rate  + a rate limit per user (two counters per call, all or nothing, one transaction)
//   budget+store budget with DECISION_STORE=postgres: each call's record written in the transaction
//                that counts it (sent with the lane's COMMIT)
// and, as the control, PostgreSQL alone at the same rate of one-row commits (with and without the
// WAL flush at commit), since a counted call's latency is at least its commit's.
//
//   node bench/budgets.mjs [--quick] [--rate R] [--servers unbudgeted,budget,budget+store,…] [--json out.json]
import { mkdtempSync, rmSync, writeFileSync, copyFileSync, mkdirSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSql } from '../dist/db/connect.js';
import { startEmbeddedPostgres } from '../dist/db/embedded.js';
import { migrate } from '../dist/db/migrate.js';
import { DECIDE_TEXT, signToken } from './lib/bodies.mjs';
import {
  BENCH_DIR,
  ROOT_DIR,
  cpuDelta,
  cpuSnapshot,
  cpuTimeMs,
  runLoad,
  sleep,
  startServer,
  taskset,
} from './lib/procs.mjs';
import { fmt, fmtInt, median, parseArgs, table, targetsTable } from './lib/stats.mjs';

export const TARGETS = { rate: 2000, p99Ms: 20, storeShare: 0.9 };

const SERVER_CPU = cpus().length >= 2 && taskset() ? 0 : undefined;
const LOAD_CPU = cpus().length >= 2 && taskset() ? 1 : undefined;
const CONNECTIONS = 50;

/** @type {Record<string, string>} */
const SCENARIOS = {
  budget: `
  - {id: refunds-per-user, tools: refund, sum: amount, max: 1000000000000, per: day, scope: user, on_exceed: require_approval}`,
  hot: `
  - {id: refunds-everyone, tools: refund, sum: amount, max: 1000000000000, per: day, scope: global, on_exceed: require_approval}`,
  // Last in each round: past its capacity at this rate, its backlog would otherwise run into the next turn.
  'budget+rate': `
  - {id: refunds-per-user, tools: refund, sum: amount, max: 1000000000000, per: day, scope: user, on_exceed: require_approval}
rate_limits:
  - {id: refund-rate, tools: refund, calls: 1000, per: 1, scope: user}`,
};

/**
 * Waits (at most 15 s) until the server has finished what it was sent: under 5 % of a CPU for 300 ms.
 * @param {number} pid
 */
async function coolDown(pid) {
  for (let i = 0; i < 50; i++) {
    const before = cpuTimeMs(pid);
    await sleep(300);
    if (cpuTimeMs(pid) - before < 15) return;
  }
}

/**
 * A policy directory: the example policies, plus (for a scenario) a file scoped to refunds holding its limits.
 * @param {string} root
 * @param {string} name
 */
function policyDirFor(root, name) {
  const dir = join(root, name);
  mkdirSync(dir);
  copyFileSync(join(ROOT_DIR, 'policies', 'payments.yaml'), join(dir, 'payments.yaml'));
  const scenario = SCENARIOS[scenarioOf(name)];
  if (scenario !== undefined) {
    // Scoped to refunds, with `default: allow`: it adds the budget and changes no answer.
    writeFileSync(
      join(dir, 'refund-budgets.yaml'),
      `policy: refund-budgets\nscope: {tools: refund}\ndefault: allow\nbudgets:${scenario}\n`,
    );
  }
  return dir;
}

/** @typedef {{ p50: number, p90?: number, p99: number, max: number }} Latency */
/**
 * A turn at the fixed rate: fixed-rate.mjs's report and the CPU per call.
 * @typedef {{ round: number, server: string, achievedPerSec: number, completed: number, sent: number, statuses: Record<string, number>, latencyMs: Latency, serverCpuUs: number, pgCpuUs: number }} OpenRow
 */
/**
 * A closed-loop turn: load.mjs's report and the CPU per call.
 * @typedef {{ server: string, reqPerSec: number, total: number, non2xx: number, errors: number, latencyMs: Latency, serverCpuUs: number }} ClosedRow
 */
/** @typedef {{ synchronous_commit: string, achievedPerSec: number, p50: number, p99: number, max: number }} ControlRow */
/** @typedef {{ achievedPerSec: number, p50: number, p99: number, lost: number, serverCpuUs: number, pgCpuUs: number }} Summary */
/**
 * @typedef {object} BudgetsResult
 * @property {{ rounds: number, duration: number, closedDuration: number, rate: number, connections: number, pinned: boolean }} config
 * @property {{ version: string, fsync: string, synchronous_commit: string }} [server]
 * @property {OpenRow[]} open
 * @property {ClosedRow[]} closed
 * @property {ControlRow[]} [control]
 * @property {Record<string, Summary>} [summary]
 * @property {import('./lib/stats.mjs').Check[]} [checks]
 */

/** The servers, in turn order; each but `unbudgeted` and `budget+store` is a scenario of SCENARIOS. */
const SERVERS = ['unbudgeted', 'budget', 'budget+store', 'hot', 'budget+rate'];
/** A server's policy scenario: `budget+store` is `budget` with the decision store on. */
const scenarioOf = (/** @type {string} */ name) => (name === 'budget+store' ? 'budget' : name);

/** @param {{ quick?: boolean, rate?: number, servers?: string[], log?: (line: string) => void }} [options] */
export async function runBudgets({
  quick = false,
  rate = TARGETS.rate,
  servers: only = SERVERS,
  log = console.log,
} = {}) {
  const rounds = quick ? 1 : 2;
  const duration = quick ? 3 : 10;
  const closedDuration = quick ? 2 : 10;
  const warmup = quick ? 1 : 3;
  const root = mkdtempSync(join(tmpdir(), 'gatehouse-bench-budgets-'));
  const dataDir = join(root, 'pg');
  const pg = await startEmbeddedPostgres({ dataDir });
  const sql = createSql(pg.url, { max: 4 });
  /** @type {Record<string, import('./lib/procs.mjs').Server>} */
  const servers = {};
  /** @type {BudgetsResult} */
  const result = {
    config: { rounds, duration, closedDuration, rate, connections: CONNECTIONS, pinned: SERVER_CPU !== undefined },
    open: [],
    closed: [],
  };
  try {
    await migrate(sql, join(ROOT_DIR, 'migrations'));
    const [settings] = await sql`
      select current_setting('server_version') as version, current_setting('fsync') as fsync, current_setting('synchronous_commit') as synchronous_commit`;
    result.server = /** @type {{ version: string, fsync: string, synchronous_commit: string }} */ (
      /** @type {unknown} */ (settings)
    );
    for (const name of SERVERS.filter((n) => only.includes(n))) {
      /** @type {NodeJS.ProcessEnv} */
      const env = { BENCH_POLICY_DIR: policyDirFor(root, name), BENCH_POLICY_ENV: 'prod', BENCH_LOG_LEVEL: 'info' };
      if (name !== 'unbudgeted') env.BENCH_DATABASE_URL = pg.url;
      if (name === 'budget+store') env.BENCH_DECISION_STORE_URL = pg.url;
      servers[name] = await startServer(join(BENCH_DIR, 'lib/gatehouse-server.mjs'), { cpu: SERVER_CPU, env });
    }
    const tokens = Array.from({ length: CONNECTIONS }, (_, i) => ({
      authorization: `Bearer ${signToken({ sub: `agent-${i}` })}`,
    }));
    const headers = { 'content-type': 'application/json' };
    // Every server allows the call, and the budgeted ones count it.
    for (const [name, s] of Object.entries(servers)) {
      const res = await fetch(`http://127.0.0.1:${s.port}/decide`, {
        method: 'POST',
        headers: { ...headers, ...tokens[0] },
        body: DECIDE_TEXT,
      });
      const body = /** @type {{ decision?: string }} */ (await res.json());
      if (res.status !== 200 || body.decision !== 'allow')
        throw new Error(`${name} answered ${res.status} ${JSON.stringify(body)}`);
    }
    const [{ n }] = await sql`select count(*)::int as n from budget_counters`;
    const counters =
      (only.some((x) => ['budget', 'budget+store', 'budget+rate'].includes(x)) ? 1 : 0) +
      (only.includes('hot') ? 1 : 0);
    if (n !== counters)
      throw new Error(`expected ${counters} counters after the first calls (one per user, one global), found ${n}`);
    log(
      `every server answers 200 allow; embedded PostgreSQL ${settings.version} (fsync ${settings.fsync}, synchronous_commit ${settings.synchronous_commit})`,
    );

    const open = (/** @type {import('./lib/procs.mjs').Server} */ s) =>
      runLoad(
        join(BENCH_DIR, 'lib/fixed-rate.mjs'),
        {
          host: '127.0.0.1',
          port: s.port,
          path: '/decide',
          body: DECIDE_TEXT,
          headers,
          headersPerConnection: tokens,
          connections: CONNECTIONS,
          rate,
          duration,
          warmup: 1,
        },
        { cpu: LOAD_CPU },
      );
    // Warm-up, not measured: JIT, and every lane's connection opened and its statements prepared.
    for (const [name, s] of Object.entries(servers)) {
      await runLoad(
        join(BENCH_DIR, 'lib/fixed-rate.mjs'),
        {
          host: '127.0.0.1',
          port: s.port,
          path: '/decide',
          body: DECIDE_TEXT,
          headers,
          headersPerConnection: tokens,
          connections: CONNECTIONS,
          rate,
          duration: warmup,
          warmup: 0,
        },
        { cpu: LOAD_CPU },
      );
      await coolDown(s.pid);
      log(`warmed up ${name} (${warmup} s at ${rate}/s)`);
    }
    for (let r = 1; r <= rounds; r++) {
      for (const [name, s] of Object.entries(servers)) {
        await coolDown(s.pid);
        const cpu0 = cpuSnapshot(dataDir, [s.pid]);
        const res = await open(s);
        const cpu = cpuDelta(cpu0, cpuSnapshot(dataDir, [s.pid]));
        const answered = res.completed + rate; // the warm-up second included
        /** @type {OpenRow} */
        const row = {
          round: r,
          server: name,
          ...res,
          serverCpuUs: (cpu.othersMs * 1000) / answered,
          pgCpuUs: (cpu.pgMs * 1000) / answered,
        };
        result.open.push(row);
        log(
          `round ${r} ${name.padEnd(11)} open loop ${rate}/s: achieved ${fmtInt(res.achievedPerSec)}/s  p50 ${fmt(res.latencyMs.p50, 3)} ms  p99 ${fmt(res.latencyMs.p99, 3)} ms  max ${fmt(res.latencyMs.max, 1)} ms  CPU per call: Gatehouse ${fmt(row.serverCpuUs, 0)} µs, PostgreSQL ${fmt(row.pgCpuUs, 0)} µs  statuses ${JSON.stringify(res.statuses)}`,
        );
      }
    }
    // The control: PostgreSQL alone (no Gatehouse), the same rate of single-row upsert commits from 4
    // connections (BUDGET_CONNECTIONS' default), waiting for the WAL flush at each commit (the
    // default) and not (synchronous_commit off, for comparison only).
    /** @type {ControlRow[]} */
    const control = [];
    result.control = control;
    for (const synchronous of ['on', 'off']) {
      const r = await commitsAlone(pg.url, rate, duration, synchronous);
      control.push(r);
      log(
        `PostgreSQL alone, synchronous_commit ${synchronous}: ${fmtInt(r.achievedPerSec)} commits/s  p50 ${fmt(r.p50, 3)} ms  p99 ${fmt(r.p99, 3)} ms  max ${fmt(r.max, 1)} ms`,
      );
    }
    for (const name of ['unbudgeted', 'budget', 'budget+store', 'hot'].filter((x) => servers[x] !== undefined)) {
      const s = /** @type {import('./lib/procs.mjs').Server} */ (servers[name]);
      await coolDown(s.pid);
      const cpu0 = cpuTimeMs(s.pid);
      const res = await runLoad(
        join(BENCH_DIR, 'lib/load.mjs'),
        {
          url: `http://127.0.0.1:${s.port}/decide`,
          body: DECIDE_TEXT,
          headers,
          headersList: tokens,
          connections: CONNECTIONS,
          duration: closedDuration,
        },
        { cpu: LOAD_CPU },
      );
      /** @type {ClosedRow} */
      const row = { server: name, ...res, serverCpuUs: ((cpuTimeMs(s.pid) - cpu0) * 1000) / res.total };
      result.closed.push(row);
      log(
        `closed loop ${name.padEnd(11)} ${fmtInt(res.reqPerSec)} req/s  p50 ${res.latencyMs.p50} ms  p99 ${res.latencyMs.p99} ms  non-2xx ${res.non2xx}  errors ${res.errors}`,
      );
    }
  } finally {
    for (const s of Object.values(servers)) await s.stop();
    await sql.end({ timeout: 5 });
    await pg.stop();
    rmSync(root, { recursive: true, force: true });
  }
  /** @type {(name: string, f: (x: OpenRow) => number) => number} */
  const of = (name, f) => median(result.open.filter((x) => x.server === name).map(f));
  /** @type {Record<string, Summary>} */
  const summary = Object.fromEntries(
    [...new Set(result.open.map((x) => x.server))].map((name) => [
      name,
      {
        achievedPerSec: of(name, (x) => x.achievedPerSec),
        p50: of(name, (x) => x.latencyMs.p50),
        p99: of(name, (x) => x.latencyMs.p99),
        // Sent and not answered 200 allow (lost in the drain, or any other status).
        lost: result.open.filter((x) => x.server === name).reduce((a, x) => a + x.sent - (x.statuses['200'] ?? 0), 0),
        serverCpuUs: of(name, (x) => x.serverCpuUs),
        pgCpuUs: of(name, (x) => x.pgCpuUs),
      },
    ]),
  );
  result.summary = summary;
  const at = (/** @type {string} */ name) => summary[name];
  const closed = (/** @type {string} */ name) => result.closed.find((c) => c.server === name);
  /** @type {import('./lib/stats.mjs').Check[]} */
  const checks = [];
  const b = at('budget');
  if (b !== undefined) {
    const rows = result.open.filter((x) => x.server === 'budget');
    const worstBudgetP99 = Math.max(...rows.map((x) => x.latencyMs.p99));
    const worstAchieved = Math.min(...rows.map((x) => x.achievedPerSec));
    checks.push({
      target: `budgeted /decide ≥ ${rate} decisions/s with p99 < ${TARGETS.p99Ms} ms (open loop, one counter per call, embedded PostgreSQL, default settings)`,
      value: `${fmtInt(worstAchieved)}/s, p99 ${fmt(worstBudgetP99, 2)} ms (worst round; ${b.lost} not 200 allow)`,
      met: worstAchieved >= rate * 0.99 && worstBudgetP99 < TARGETS.p99Ms && b.lost === 0,
    });
  }
  const stored = closed('budget+store');
  const storeOff = closed('budget');
  if (stored !== undefined && storeOff !== undefined)
    checks.push({
      target: `budgeted /decide with DECISION_STORE=postgres (each record in the counting transaction) ≥ ${TARGETS.storeShare * 100} % of the throughput with it off (closed loop)`,
      value: `${fmtInt(stored.reqPerSec)} vs ${fmtInt(storeOff.reqPerSec)} req/s: ${fmt((100 * stored.reqPerSec) / storeOff.reqPerSec, 1)} %; Gatehouse CPU ${fmt(stored.serverCpuUs, 0)} vs ${fmt(storeOff.serverCpuUs, 0)} µs/call`,
      met: stored.reqPerSec >= TARGETS.storeShare * storeOff.reqPerSec,
    });
  const u = at('unbudgeted');
  if (u !== undefined)
    checks.push({
      target: `unbudgeted /decide at the same rate (side by side)`,
      value: `${fmtInt(u.achievedPerSec)}/s, p99 ${fmt(u.p99, 2)} ms`,
      met: null,
    });
  for (const [name, what] of [
    ['budget+store', 'the decision store on, open loop'],
    ['budget+rate', 'a budget and a rate limit on each call'],
    ['hot', 'every call on one global counter'],
  ]) {
    const x = at(name);
    if (x !== undefined)
      checks.push({
        target: `${what} (informational)`,
        value: `${fmtInt(x.achievedPerSec)}/s, p99 ${fmt(x.p99, 2)} ms, PostgreSQL CPU ${fmt(x.pgCpuUs, 0)} µs/call`,
        met: null,
      });
  }
  checks.push(
    ...result.closed.map((c) => ({
      target: `closed loop, ${c.server} (informational)`,
      value: `${fmtInt(c.reqPerSec)} req/s, p99 ${c.latencyMs.p99} ms`,
      met: null,
    })),
  );
  result.checks = checks;
  return result;
}

/**
 * Single-row upsert commits at a fixed rate, open loop, latency from the scheduled time (ms).
 * @param {string} url
 * @param {number} rate
 * @param {number} seconds
 * @param {string} synchronous
 * @returns {Promise<ControlRow>}
 */
async function commitsAlone(url, rate, seconds, synchronous) {
  const sql = createSql(url, { max: 4 });
  try {
    await sql`create table if not exists bench_commits (k int primary key, n bigint not null)`;
    await sql.unsafe(`alter role current_user set synchronous_commit = '${synchronous === 'off' ? 'off' : 'on'}'`);
    await sql.end({ timeout: 5 });
    const s2 = createSql(url, { max: 4 });
    /** @type {number[]} */
    const latencies = [];
    /** @type {Promise<unknown>[]} */
    const pending = [];
    const start = performance.now();
    const end = start + seconds * 1000;
    for (let k = 0; ; k++) {
      const at = start + (k * 1000) / rate;
      if (at >= end) break;
      const wait = at - performance.now();
      if (wait > 1) await sleep(wait);
      pending.push(
        s2`insert into bench_commits values (${k % CONNECTIONS}, 1) on conflict (k) do update set n = bench_commits.n + 1`.then(
          () => latencies.push(performance.now() - at),
        ),
      );
    }
    await Promise.all(pending);
    const elapsed = (performance.now() - start) / 1000;
    await s2.unsafe('alter role current_user reset synchronous_commit');
    await s2.end({ timeout: 5 });
    latencies.sort((a, b) => a - b);
    const q = (/** @type {number} */ p) =>
      latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)];
    return {
      synchronous_commit: synchronous,
      achievedPerSec: latencies.length / elapsed,
      p50: q(0.5),
      p99: q(0.99),
      max: q(1),
    };
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => undefined);
    throw err;
  }
}

/**
 * @param {BudgetsResult} result
 * @param {(text: string) => void} [print]
 */
export function printBudgets(result, print = console.log) {
  const c = result.config;
  print(
    `\nBudgets: POST /decide, ${c.connections} connections (one agent each), open loop at ${c.rate}/s, ${c.rounds} round(s) × ${c.duration} s per server, alternating${c.pinned ? '; servers on CPU 0, load on CPU 1, PostgreSQL unpinned' : ''}; embedded PostgreSQL ${result.server?.version} (fsync ${result.server?.fsync}, synchronous_commit ${result.server?.synchronous_commit})`,
  );
  print(
    table(
      ['server', 'achieved/s', 'p50 ms', 'p99 ms', 'not 200', 'Gatehouse CPU µs/call', 'PostgreSQL CPU µs/call'],
      Object.entries(result.summary ?? {}).map(([name, s]) => [
        name,
        fmtInt(s.achievedPerSec),
        fmt(s.p50, 3),
        fmt(s.p99, 3),
        s.lost,
        fmt(s.serverCpuUs, 0),
        fmt(s.pgCpuUs, 0),
      ]),
    ),
  );
  print(`\nPostgreSQL alone: ${c.rate} single-row upsert commits/s from 4 connections, open loop`);
  print(
    table(
      ['synchronous_commit', 'commits/s', 'p50 ms', 'p99 ms', 'max ms'],
      (result.control ?? []).map((r) => [
        r.synchronous_commit,
        fmtInt(r.achievedPerSec),
        fmt(r.p50, 3),
        fmt(r.p99, 3),
        fmt(r.max, 1),
      ]),
    ),
  );
  print(`\nClosed loop (${c.closedDuration} s each, autocannon)`);
  print(
    table(
      ['server', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'Gatehouse CPU µs/call'],
      result.closed.map((r) => [
        r.server,
        fmtInt(r.reqPerSec),
        r.latencyMs.p50,
        r.latencyMs.p99,
        r.non2xx,
        fmt(r.serverCpuUs, 0),
      ]),
    ),
  );
  print('\nTargets');
  print(targetsTable(result.checks ?? []));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs();
  const result = await runBudgets({
    quick: args.quick,
    rate: args.extra.rate ? Number(args.extra.rate) : TARGETS.rate,
    ...(typeof args.extra.servers === 'string' ? { servers: args.extra.servers.split(',') } : {}),
  });
  printBudgets(result);
  if (args.json) writeFileSync(args.json, JSON.stringify(result, null, 2));
}
