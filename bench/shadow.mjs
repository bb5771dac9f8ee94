// @ts-check
// Shadow mode's cost on POST /decide: the same server with SHADOW_POLICY_DIR off and on (the shadow
// set is the serving set again, so every request is decided twice in full and nothing disagrees:
// the most a shadow costs per request), loaded alternately (A B A B) from a separate process.
//
//   npm run build && node bench/shadow.mjs [--quick] [--rounds N] [--duration S] [--connections C]
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { DECIDE_TEXT, signToken } from './lib/bodies.mjs';
import { BENCH_DIR, runLoad, startServer, taskset } from './lib/procs.mjs';
import { fmt, fmtInt, median, parseArgs, targetsTable } from './lib/stats.mjs';

const SERVER_CPU = cpus().length >= 2 && taskset() ? 0 : undefined;
const LOAD_CPU = cpus().length >= 2 && taskset() ? 1 : undefined;

/** @param {{ quick?: boolean, rounds?: number, duration?: number, connections?: number, log?: (line: string) => void }} [options] */
export async function runShadow({ quick = false, rounds, duration, connections = 50, log = console.log } = {}) {
  rounds ??= quick ? 2 : 4;
  duration ??= quick ? 3 : 10;
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-shadow-'));
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${signToken()}` };
  /** @type {(name: string, env: NodeJS.ProcessEnv) => Promise<import('./lib/procs.mjs').Server>} */
  const start = (name, env) => {
    const fd = openSync(join(dir, `${name}.log`), 'w');
    const server = startServer(join(BENCH_DIR, 'lib/gatehouse-server.mjs'), { cpu: SERVER_CPU, stdoutFd: fd, env });
    return server.finally(() => closeSync(fd));
  };
  const servers = { off: await start('off', {}), on: await start('on', { BENCH_SHADOW_POLICY_DIR: './policies' }) };
  /** @type {(s: import('./lib/procs.mjs').Server, d: number) => Promise<any>} any: load.mjs's report */
  const load = (s, d) =>
    runLoad(
      join(BENCH_DIR, 'lib/load.mjs'),
      { url: `http://127.0.0.1:${s.port}/decide`, body: DECIDE_TEXT, headers, connections, duration: d },
      { cpu: LOAD_CPU },
    );
  /** @type {{ off: number[], on: number[] }} */
  const rps = { off: [], on: [] };
  try {
    for (const s of Object.values(servers)) await load(s, 1);
    for (let r = 1; r <= rounds; r++) {
      for (const name of /** @type {const} */ (['off', 'on'])) {
        const res = await load(servers[name], duration);
        if (res.non2xx > 0 || res.errors > 0) throw new Error(`${name}: ${res.non2xx} non-2xx, ${res.errors} errors`);
        rps[name].push(res.reqPerSec);
        log(
          `round ${r} shadow ${name.padEnd(3)} ${fmtInt(res.reqPerSec).padStart(7)} req/s  p50 ${res.latencyMs.p50} ms  p99 ${res.latencyMs.p99} ms`,
        );
      }
    }
    /** @type {{ off: number, on: number, ratio: number, checks?: import('./lib/stats.mjs').Check[] }} */
    const summary = { off: median(rps.off), on: median(rps.on), ratio: median(rps.on) / median(rps.off) };
    log(`shadow on / off: ${fmtInt(summary.on)} / ${fmtInt(summary.off)} req/s = ${fmt(summary.ratio * 100, 1)} %`);
    // No target of its own: a shadow decides every request twice, and this is what that costs.
    const checks = [
      {
        target: 'POST /decide with SHADOW_POLICY_DIR (every request decided twice), against it off',
        value: `${fmt(summary.ratio * 100, 1)} %`,
        met: null,
      },
    ];
    summary.checks = checks;
    log(`\nTargets\n${targetsTable(checks)}`);
    return summary;
  } finally {
    for (const s of Object.values(servers)) await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { quick, json, extra } = parseArgs();
  const num = (/** @type {string | true | undefined} */ v) => (v === undefined ? undefined : Number(v));
  const result = await runShadow({
    quick,
    rounds: num(extra.rounds),
    duration: num(extra.duration),
    connections: num(extra.connections) ?? 50,
  });
  if (json) writeFileSync(json, JSON.stringify(result, null, 2));
}
