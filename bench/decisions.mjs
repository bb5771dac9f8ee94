// @ts-check
// The decision store's cost on POST /decide: the same server with DECISION_STORE off and on (on: the
// records queued and written in batches to an embedded PostgreSQL on this machine, LOG_ARGS on in
// both, so every record carries its arguments and claims: the most a record costs), loaded
// alternately (A B A B) from a separate process. Target: on ≥ 90 % of off. At the end, the records
// written and dropped (queue full) are counted against the requests answered with the store on.
// Each round also reports the CPU each request cost the server and PostgreSQL (from /proc).
//
// Where PostgreSQL runs: a deployment's database has a host of its own, so its CPU is not the
// service's. On two cores the nearest to that is the load generator's core (server on CPU 0, load
// and PostgreSQL on CPU 1; the load generator uses about half of its core at these rates).
// --pg-anywhere leaves PostgreSQL unpinned: it then takes its CPU per record from the server's
// core too, and the ratio measures the two programs sharing one machine.
//
//   npm run build && node bench/decisions.mjs [--quick] [--rounds N] [--duration S] [--connections C] [--pg-anywhere]
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSql } from '../dist/db/connect.js';
import { startEmbeddedPostgres } from '../dist/db/embedded.js';
import { migrate } from '../dist/db/migrate.js';
import { DECIDE_TEXT, signToken } from './lib/bodies.mjs';
import {
  BENCH_DIR,
  ROOT_DIR,
  cpuDelta,
  cpuSnapshot,
  pinPostgres,
  runLoad,
  sleep,
  startServer,
  taskset,
} from './lib/procs.mjs';
import { fmt, fmtInt, median, parseArgs, targetsTable } from './lib/stats.mjs';

export const TARGETS = { ratioPct: 90 };

const SERVER_CPU = cpus().length >= 2 && taskset() ? 0 : undefined;
const LOAD_CPU = cpus().length >= 2 && taskset() ? 1 : undefined;

/** @param {{ quick?: boolean, rounds?: number, duration?: number, connections?: number, pgAnywhere?: boolean, log?: (line: string) => void }} [options] */
export async function runDecisions({
  quick = false,
  rounds,
  duration,
  connections = 50,
  pgAnywhere = false,
  log = console.log,
} = {}) {
  rounds ??= quick ? 2 : 8;
  duration ??= quick ? 3 : 5;
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-decisions-'));
  const pg = await startEmbeddedPostgres({ dataDir: join(dir, 'pg') });
  const pgPinned = !pgAnywhere && LOAD_CPU !== undefined && pinPostgres(pg.dataDir, LOAD_CPU);
  const sql = createSql(pg.url, { max: 1 });
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${signToken()}` };
  /** @type {Record<string, import('./lib/procs.mjs').Server>} */
  const servers = {};
  try {
    await migrate(sql, join(ROOT_DIR, 'migrations'));
    /** @type {(name: string, env: NodeJS.ProcessEnv) => Promise<import('./lib/procs.mjs').Server>} */
    const start = (name, env) => {
      const fd = openSync(join(dir, `${name}.log`), 'w');
      const server = startServer(join(BENCH_DIR, 'lib/gatehouse-server.mjs'), {
        cpu: SERVER_CPU,
        stdoutFd: fd,
        env: { BENCH_LOG_ARGS: 'true', ...env },
      });
      return server.finally(() => closeSync(fd));
    };
    servers.off = await start('off', {});
    servers.on = await start('on', { BENCH_DECISION_STORE_URL: pg.url });
    /** @type {(s: import('./lib/procs.mjs').Server, d: number) => Promise<any>} any: load.mjs's report */
    const load = (s, d) =>
      runLoad(
        join(BENCH_DIR, 'lib/load.mjs'),
        { url: `http://127.0.0.1:${s.port}/decide`, body: DECIDE_TEXT, headers, connections, duration: d },
        { cpu: LOAD_CPU },
      );
    /** @type {{ off: number[], on: number[] }} */
    const rps = { off: [], on: [] };
    for (const s of Object.values(servers)) await load(s, 1);
    for (let r = 1; r <= rounds; r++) {
      for (const name of /** @type {const} */ (['off', 'on'])) {
        const cpu0 = cpuSnapshot(pg.dataDir, [servers[name].pid]);
        const res = await load(servers[name], duration);
        const cpu = cpuDelta(cpu0, cpuSnapshot(pg.dataDir, [servers[name].pid]));
        if (res.non2xx > 0 || res.errors > 0) throw new Error(`${name}: ${res.non2xx} non-2xx, ${res.errors} errors`);
        rps[name].push(res.reqPerSec);
        const perRequestUs = (/** @type {number} */ ms) => fmt((ms * 1000) / (res.reqPerSec * duration), 1);
        log(
          `round ${r} store ${name.padEnd(3)} ${fmtInt(res.reqPerSec).padStart(7)} req/s  p50 ${res.latencyMs.p50} ms  p99 ${res.latencyMs.p99} ms  CPU per request: server ${perRequestUs(cpu.othersMs)} µs, PostgreSQL ${perRequestUs(cpu.pgMs)} µs`,
        );
      }
    }
    const metricsText = await (await fetch(`http://127.0.0.1:${servers.on.port}/metrics`)).text();
    const dropped = [...metricsText.matchAll(/^gatehouse_decision_records_dropped_total\{[^}]*\} (\d+)/gm)].reduce(
      (a, m) => a + Number(m[1]),
      0,
    );
    // The server's shutdown writes what is still queued.
    await servers.on.stop();
    delete servers.on;
    await sleep(100);
    const [{ n }] = await sql`select count(*)::int as n from decisions`;
    /** @type {{ off: number, on: number, ratio: number, recorded: number, dropped: number, checks?: import('./lib/stats.mjs').Check[] }} */
    const summary = {
      off: median(rps.off),
      on: median(rps.on),
      ratio: median(rps.on) / median(rps.off),
      recorded: n,
      dropped,
    };
    log(
      `store on / off: ${fmtInt(summary.on)} / ${fmtInt(summary.off)} req/s = ${fmt(summary.ratio * 100, 1)} % (medians of ${rounds} rounds × ${duration} s; PostgreSQL ${pgPinned ? `on CPU ${LOAD_CPU}, with the load` : 'unpinned'})`,
    );
    log(
      `records: ${fmtInt(n)} written, ${fmtInt(dropped)} dropped (gatehouse_decision_records_dropped_total) with the store on`,
    );
    const checks = [
      {
        target: `POST /decide with DECISION_STORE=postgres ≥ ${TARGETS.ratioPct} % of it off`,
        value: `${fmt(summary.ratio * 100, 1)} % (${fmtInt(summary.on)} against ${fmtInt(summary.off)} req/s; PostgreSQL ${pgPinned ? 'with the load' : 'unpinned'})`,
        met: summary.ratio * 100 >= TARGETS.ratioPct,
      },
      {
        target: 'decision records dropped with the store on',
        value: `${fmtInt(dropped)} of ${fmtInt(n + dropped)}`,
        met: null,
      },
    ];
    summary.checks = checks;
    log(`\nTargets\n${targetsTable(checks)}`);
    return summary;
  } finally {
    for (const s of Object.values(servers)) await s.stop();
    await sql.end({ timeout: 5 });
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { quick, json, extra } = parseArgs();
  const num = (/** @type {string | true | undefined} */ v) => (v === undefined ? undefined : Number(v));
  const result = await runDecisions({
    quick,
    rounds: num(extra.rounds),
    duration: num(extra.duration),
    connections: num(extra.connections) ?? 50,
    pgAnywhere: extra['pg-anywhere'] !== undefined,
  });
  if (json) writeFileSync(json, JSON.stringify(result, null, 2));
}
