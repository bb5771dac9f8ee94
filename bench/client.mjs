// @ts-check
// What gatehouse-pdp/client adds to a decision: `gate()` of an allowed call against a bare `fetch` POST
// /decide of the same body, on the same connection pool (Node's fetch), sequentially and with 16 in
// flight, against a Gatehouse process on this machine (the benchmarks' server, no database: an
// allowed call never touches one). Alternating rounds, the median of each kind reported.
//
//   node bench/client.mjs [--quick] [--json out.json]
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '../dist/client/index.js';
import { DECIDE_BODY, DECIDE_TEXT, signToken } from './lib/bodies.mjs';
import { BENCH_DIR, startServer } from './lib/procs.mjs';
import { fmt, median, parseArgs, table, targetsTable } from './lib/stats.mjs';

export const TARGETS = { overheadPct: 10 };

const now = () => Number(process.hrtime.bigint()) / 1e3; // µs

export async function runClient({ quick = false, log = console.log } = {}) {
  const server = await startServer(join(BENCH_DIR, 'lib/gatehouse-server.mjs'));
  const url = `http://127.0.0.1:${server.port}`;
  const token = signToken();
  const client = createClient({ url, token });
  const bare = async () => {
    const res = await fetch(`${url}/decide`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: DECIDE_TEXT,
    });
    const body = /** @type {{ decision?: string }} */ (await res.json());
    if (body.decision !== 'allow') throw new Error(`bare: ${body.decision}`);
  };
  const gated = async () => {
    const verdict = await client.gate(DECIDE_BODY);
    if (verdict.decision !== 'allow') throw new Error(`gate: ${verdict.decision} ${verdict.error?.detail ?? ''}`);
  };
  const calls = quick ? 500 : 3000;
  /** µs per call with `inFlight` callers for `calls` calls. */
  /** @type {(fn: () => Promise<void>, inFlight: number) => Promise<number>} */
  const time = async (fn, inFlight) => {
    let left = calls;
    const t0 = now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (left-- > 0) await fn();
      }),
    );
    return (now() - t0) / calls;
  };
  /** @type {string[][]} */
  const rows = [];
  /** @type {{ calls: number, rounds: { inFlight: number, bareUs: number, gateUs: number, overheadPct: number }[], checks?: import('./lib/stats.mjs').Check[] }} */
  const result = { calls, rounds: [] };
  try {
    for (const fn of [bare, gated]) await time(fn, 4); // warm both paths and the pool
    for (const inFlight of [1, 16]) {
      /** @type {{ bare: number[], gate: number[] }} */
      const samples = { bare: [], gate: [] };
      for (let round = 0; round < (quick ? 3 : 7); round++) {
        samples.bare.push(await time(bare, inFlight));
        samples.gate.push(await time(gated, inFlight));
      }
      const b = median(samples.bare);
      const g = median(samples.gate);
      const overheadPct = ((g - b) / b) * 100;
      result.rounds.push({ inFlight, bareUs: b, gateUs: g, overheadPct });
      rows.push([String(inFlight), fmt(b, 0), fmt(g, 0), `${fmt(overheadPct, 1)} %`]);
    }
  } finally {
    await server.stop();
  }
  log(table(['in flight', 'bare fetch µs/call', 'gate() µs/call', 'overhead'], rows));
  const checks = result.rounds.map((r) => ({
    target: `gate() of an allowed call over a bare POST /decide, ${r.inFlight} in flight ≤ ${TARGETS.overheadPct} %`,
    value: `${fmt(r.overheadPct, 1)} % (${fmt(r.gateUs, 0)} against ${fmt(r.bareUs, 0)} µs per call)`,
    met: r.overheadPct <= TARGETS.overheadPct,
  }));
  result.checks = checks;
  log(`\nTargets\n${targetsTable(checks)}`);
  return result;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs();
  const result = await runClient({ quick: args.quick });
  if (args.json) writeFileSync(args.json, JSON.stringify(result, null, 2));
}
