// @ts-check
// The approval cycle rate on the embedded PostgreSQL: create → grant → consume (redeem), as many
// cycles per second as the store sustains with several cycles in flight, for a fixed time. The
// cluster is a fresh one in a temporary directory with the server's default settings (fsync and
// synchronous_commit on, as `npm start` runs it); one more run with synchronous_commit=off shows
// what the commit flushes cost. Then the same cycle through HTTP (POST /approvals, POST
// /approvals/:id/grant, POST /decide with approval_id) against a Gatehouse process on that database.
//
//   node bench/approvals.mjs [--quick] [--no-http] [--json out.json]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApprovalStore } from '../dist/approvals/store.js';
import { createSql } from '../dist/db/connect.js';
import { startEmbeddedPostgres } from '../dist/db/embedded.js';
import { migrate } from '../dist/db/migrate.js';
import { decide } from '../dist/policy/decide.js';
import { loadPolicies } from '../dist/policy/load.js';
import { IDENTITY, signToken } from './lib/bodies.mjs';
import { BENCH_DIR, ROOT_DIR, cpuDelta, cpuSnapshot, sleep, startServer } from './lib/procs.mjs';
import { fmt, parseArgs, quantile, median, table, targetsTable } from './lib/stats.mjs';

export const TARGETS = { cyclesPerSec: 500 };

const now = () => Number(process.hrtime.bigint()) / 1e6; // ms

/**
 * @typedef {object} Driven
 * @property {{ bench: number, postgres: number, server: number } | null} cpuMsPerCycle null without a data directory to read
 * @property {number} concurrency
 * @property {number} cycles
 * @property {number} failures
 * @property {number} cyclesPerSec
 * @property {number} p50Ms
 * @property {number} p99Ms
 */

/**
 * Run `cycle(n)` with `concurrency` in flight for `seconds`; cycles/s and latency per cycle.
 * @param {(n: number) => Promise<void>} cycle
 * @param {{ concurrency: number, seconds: number, dataDir?: string, otherPids?: number[] }} options
 * @returns {Promise<Driven>}
 */
async function drive(cycle, { concurrency, seconds, dataDir, otherPids }) {
  const cpu0 = dataDir ? cpuSnapshot(dataDir, otherPids) : null;
  /** @type {number[]} */
  const latencies = [];
  let n = 0;
  let failures = 0;
  const start = now();
  const end = start + seconds * 1000;
  const worker = async () => {
    while (now() < end) {
      const t0 = now();
      try {
        await cycle(n++);
        latencies.push(now() - t0);
      } catch (err) {
        failures++;
        if (failures <= 3) console.error(`cycle failed: ${err instanceof Error ? err.message : err}`);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (now() - start) / 1000;
  const cpu = cpu0 && dataDir ? cpuDelta(cpu0, cpuSnapshot(dataDir, otherPids)) : null;
  const perCycle = (/** @type {number} */ ms) => (cpu && latencies.length ? ms / latencies.length : NaN);
  return {
    // CPU per cycle: this process (client or store caller), PostgreSQL, the Gatehouse server (HTTP).
    cpuMsPerCycle: cpu
      ? { bench: perCycle(cpu.selfMs), postgres: perCycle(cpu.pgMs), server: perCycle(cpu.othersMs) }
      : null,
    concurrency,
    cycles: latencies.length,
    failures,
    cyclesPerSec: latencies.length / elapsed,
    p50Ms: median(latencies),
    p99Ms: quantile(latencies, 0.99),
  };
}

/** @typedef {Driven & { setting: string }} Row */
/**
 * @typedef {object} ApprovalsResult
 * @property {number} seconds
 * @property {number} startMs
 * @property {{ version: string, fsync: string, synchronous_commit: string }} [server]
 * @property {Row[]} store
 * @property {Row[]} http
 * @property {import('./lib/stats.mjs').Check[]} [checks]
 */

/** @param {{ quick?: boolean, http?: boolean, log?: (line: string) => void }} [options] */
export async function runApprovals({ quick = false, http = true, log = console.log } = {}) {
  const seconds = quick ? 2 : 10;
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-pg-'));
  const t0 = now();
  const pg = await startEmbeddedPostgres({ dataDir });
  /** @type {ApprovalsResult} */
  const result = { seconds, startMs: now() - t0, store: [], http: [] };
  log(`embedded PostgreSQL started in ${fmt(result.startMs, 0)} ms (fresh cluster, default settings) in ${dataDir}`);
  const sql = createSql(pg.url, { max: 10 }); // DB_POOL_MAX default
  let server = null;
  try {
    await migrate(sql, join(ROOT_DIR, 'migrations'));
    const [{ server_version, fsync, synchronous_commit }] = await sql`
      select current_setting('server_version') as server_version, current_setting('fsync') as fsync,
             current_setting('synchronous_commit') as synchronous_commit`;
    result.server = { version: server_version, fsync, synchronous_commit };
    const policies = await loadPolicies(join(ROOT_DIR, 'policies'), { env: 'prod' });
    const store = createApprovalStore(sql, { approvalTtlMs: 86_400_000, grantTtlMs: 3_600_000, deadlineMs: 2_000 });
    const requester = { sub: IDENTITY.user, team: IDENTITY.team, agent: IDENTITY.agent, name: null };
    const approver = { sub: 'operator-1' };

    // One cycle: the decision (require_approval: a refund over the confirm cap), create, grant, consume.
    let salt = 0;
    const cycle = async (/** @type {number} */ n) => {
      const req = { tool: 'refund', args: { order: `A-${salt}-${n}`, amount: 500, note: 'damaged parcel' } };
      const decision = decide(policies, req, IDENTITY);
      // A refund over the confirm cap: the example policies answer require_approval, with its descriptor.
      const descriptor = /** @type {import('../dist/policy/model.js').ApprovalDescriptor} */ (decision.approval);
      const { approval } = await store.create({
        descriptor,
        tool: req.tool,
        args: req.args,
        requester,
        policies: decision.policies,
      });
      const granted = await store.grant(approval.id, approver, null);
      if (!granted.ok) throw new Error(`grant: ${granted.error}`);
      const consumed = await store.consume(approval.id, { sub: requester.sub }, descriptor.hash);
      if (!consumed.ok) throw new Error('consume failed');
    };

    await drive(cycle, { concurrency: 8, seconds: quick ? 0.5 : 2 }); // warm-up
    // The statistics autovacuum gathers within its first minute on a real database (50 rows changed,
    // then its next round), which these phases are too short to wait for. Without them the cached
    // plans are an empty table's: the pending count in the create read every earlier approval of the
    // requester through approvals_listing_by_requester, ~4× the PostgreSQL CPU per cycle at 16 in
    // flight (docs/performance.md, "Found by running the benchmarks").
    await sql`analyze approvals`;
    const series = quick ? [16] : [1, 8, 16];
    for (const concurrency of series) {
      salt++;
      const r = await drive(cycle, { concurrency, seconds, dataDir });
      result.store.push({ setting: 'defaults', ...r });
      log(
        `store, ${concurrency} in flight: ${fmt(r.cyclesPerSec, 0)} cycles/s (p50 ${fmt(r.p50Ms, 1)} ms, p99 ${fmt(r.p99Ms, 1)} ms per cycle, ${r.failures} failed; CPU per cycle: store caller ${fmt(r.cpuMsPerCycle?.bench, 2)} ms, PostgreSQL ${fmt(r.cpuMsPerCycle?.postgres, 2)} ms)`,
      );
    }
    // What the WAL flush at each commit costs: the same with synchronous_commit=off (not a recommendation).
    if (!quick) {
      await sql`alter system set synchronous_commit = off`;
      await sql`select pg_reload_conf()`;
      await sleep(200);
      salt++;
      const r = await drive(cycle, { concurrency: 16, seconds, dataDir });
      result.store.push({ setting: 'synchronous_commit=off', ...r });
      log(
        `store, 16 in flight, synchronous_commit=off: ${fmt(r.cyclesPerSec, 0)} cycles/s (p50 ${fmt(r.p50Ms, 1)} ms, p99 ${fmt(r.p99Ms, 1)} ms)`,
      );
      await sql`alter system reset synchronous_commit`;
      await sql`select pg_reload_conf()`;
    }

    if (http) {
      // The same cycle through the API, against a Gatehouse process on this database.
      server = await startServer(join(BENCH_DIR, 'lib/gatehouse-server.mjs'), {
        env: { BENCH_DATABASE_URL: pg.url, BENCH_LOG_LEVEL: 'info' },
      });
      const base = `http://127.0.0.1:${server.port}`;
      const agent = { authorization: `Bearer ${signToken()}`, 'content-type': 'application/json' };
      const operator = {
        authorization: `Bearer ${signToken({ sub: 'operator-1', team: 'ops', roles: ['approver'] })}`,
      };
      /** @type {(path: string, headers: Record<string, string>, body: string | undefined, want: number) => Promise<any>} any: the API's JSON answer */
      const call = async (path, headers, body, want) => {
        const res = await fetch(base + path, { method: 'POST', headers, ...(body === undefined ? {} : { body }) });
        const text = await res.text();
        if (res.status !== want) throw new Error(`${path}: ${res.status} ${text.slice(0, 200)}`);
        return JSON.parse(text);
      };
      const httpCycle = async (/** @type {number} */ n) => {
        const body = JSON.stringify({
          tool: 'refund',
          args: { order: `H-${salt}-${n}`, amount: 500, note: 'damaged parcel' },
        });
        const created = await call('/approvals', agent, body, 201);
        await call(`/approvals/${created.id}/grant`, operator, undefined, 200);
        const redeemed = await call(
          '/decide',
          agent,
          JSON.stringify({ ...JSON.parse(body), approval_id: created.id }),
          200,
        );
        if (redeemed.decision !== 'allow') throw new Error(`redeem: ${redeemed.decision}`);
      };
      salt++;
      await drive(httpCycle, { concurrency: 8, seconds: quick ? 0.5 : 1 });
      for (const concurrency of [16]) {
        salt++;
        const r = await drive(httpCycle, { concurrency, seconds, dataDir, otherPids: [server.pid] });
        result.http.push({ setting: 'defaults', ...r });
        log(
          `HTTP, ${concurrency} in flight: ${fmt(r.cyclesPerSec, 0)} cycles/s (p50 ${fmt(r.p50Ms, 1)} ms, p99 ${fmt(r.p99Ms, 1)} ms per cycle, ${r.failures} failed; CPU per cycle: client ${fmt(r.cpuMsPerCycle?.bench, 2)} ms, server ${fmt(r.cpuMsPerCycle?.server, 2)} ms, PostgreSQL ${fmt(r.cpuMsPerCycle?.postgres, 2)} ms)`,
        );
      }
    }
  } finally {
    await server?.stop();
    await sql.end({ timeout: 5 });
    await pg.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  const best = Math.max(...result.store.filter((r) => r.setting === 'defaults').map((r) => r.cyclesPerSec));
  /** @type {import('./lib/stats.mjs').Check[]} */
  const checks = [
    {
      target: `create → grant → redeem ≥ ${TARGETS.cyclesPerSec} cycles/s (store, embedded PostgreSQL, default settings)`,
      value: `${fmt(best, 0)} cycles/s`,
      met: best >= TARGETS.cyclesPerSec,
    },
  ];
  if (result.http.length > 0) {
    const h = Math.max(...result.http.map((r) => r.cyclesPerSec));
    checks.push({ target: `the same through HTTP (informational)`, value: `${fmt(h, 0)} cycles/s`, met: null });
  }
  result.checks = checks;
  return result;
}

/**
 * @param {ApprovalsResult} result
 * @param {(text: string) => void} [print]
 */
export function printApprovals(result, print = console.log) {
  print(
    `\nApprovals: create → grant → consume on the embedded PostgreSQL ${result.server?.version ?? ''} (fsync ${result.server?.fsync}, synchronous_commit ${result.server?.synchronous_commit}), ${result.seconds} s per row, pool of 10`,
  );
  const cpu = (/** @type {Row} */ r) => [
    fmt(r.cpuMsPerCycle?.bench, 2),
    (r.cpuMsPerCycle?.server ?? 0) > 0 ? fmt(r.cpuMsPerCycle?.server, 2) : '',
    fmt(r.cpuMsPerCycle?.postgres, 2),
  ];
  print(
    table(
      [
        'path',
        'server setting',
        'in flight',
        'cycles/s',
        'p50 ms/cycle',
        'p99 ms/cycle',
        'failed',
        'CPU ms/cycle: caller',
        'Gatehouse',
        'PostgreSQL',
      ],
      [
        ...result.store.map((r) => [
          'store',
          r.setting,
          r.concurrency,
          fmt(r.cyclesPerSec, 0),
          fmt(r.p50Ms, 1),
          fmt(r.p99Ms, 1),
          r.failures,
          ...cpu(r),
        ]),
        ...result.http.map((r) => [
          'HTTP',
          r.setting,
          r.concurrency,
          fmt(r.cyclesPerSec, 0),
          fmt(r.p50Ms, 1),
          fmt(r.p99Ms, 1),
          r.failures,
          ...cpu(r),
        ]),
      ],
    ),
  );
  print('\nTargets');
  print(targetsTable(result.checks ?? []));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs();
  const result = await runApprovals({ quick: args.quick, http: args.extra['no-http'] === undefined });
  printApprovals(result);
  if (args.json) writeFileSync(args.json, JSON.stringify(result, null, 2));
}
