// @ts-check
// One caller with a valid token against everyone else: what its approvals and long-polls cost other
// callers. A Gatehouse process on a fresh embedded PostgreSQL; a victim sends /decide at a fixed rate
// (open loop, latency from the scheduled time) while an attacker
//   1. tries to file 100 approvals with ~1 MiB arguments (each refused: APPROVAL_MAX_BYTES),
//   2. files 100 with the largest arguments an approval may hold (~64 KiB),
//   3. lists its approvals and reads them whole, in two loops, and holds 6 idle long-polls on one;
// then, with no other load, 2,000 idle long-polls (100 callers × 20, MAX_WAITS_PER_CALLER) are held
// and the CPU they cost Gatehouse and PostgreSQL is measured.
//
//   node bench/attack.mjs [--quick] [--json out.json]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSql } from '../dist/db/connect.js';
import { startEmbeddedPostgres } from '../dist/db/embedded.js';
import { migrate } from '../dist/db/migrate.js';
import { signToken } from './lib/bodies.mjs';
import {
  BENCH_DIR,
  ROOT_DIR,
  cpuDelta,
  cpuSnapshot,
  memoryOf,
  runLoad,
  sampleRss,
  sleep,
  startServer,
} from './lib/procs.mjs';
import { fmt, fmtInt, parseArgs, table, targetsTable } from './lib/stats.mjs';

export const TARGETS = { victimP99Ms: 50, rssGrowthMB: 100, idleWaitCpuSecPerSec: 0.05 };

const POLICY = `policy: attack-bench
tools:
  lookup_order: {kind: read_only}
  export_report: {kind: remote_mutation}
rules:
  - {id: lookups, tools: [lookup_order], allow: true}
  - {id: exports, tools: [export_report], allow: true, confirm: true, reason: exports need an operator}
`;
const VICTIM_BODY = JSON.stringify({ tool: 'lookup_order', args: { order: 'A-2024-000123' } });

/**
 * @typedef {object} Phase
 * @property {number} p50
 * @property {number} p99
 * @property {number} max
 * @property {number} answered
 * @property {number} sent
 * @property {number} rssBeforeMB
 * @property {number} rssPeakMB
 * @property {Record<string, number>} statuses
 * @property {number} [listBytes]
 * @property {number} [lists]
 */
/**
 * @typedef {object} AttackResult
 * @property {number} rate
 * @property {number} seconds
 * @property {Record<string, Phase>} phases
 * @property {number} rssAfterHugeMB
 * @property {number} rssAfterFilingMB
 * @property {number} refusedHuge
 * @property {number} stored
 * @property {number} rssGrowthMB
 * @property {{ waits: number, seconds: number, gatehouseCpuSecPerSec: number, postgresCpuSecPerSec: number, totalCpuSecPerSec?: number, twentyFirst?: number, answered?: number }} idleWaits
 * @property {import('./lib/stats.mjs').Check[]} checks
 */

/** @param {{ quick?: boolean }} [options] */
export async function runAttack({ quick = false } = {}) {
  const log = (/** @type {string} */ line) => console.log(line);
  const seconds = quick ? 4 : 10;
  const rate = 500;
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-attack-pg-'));
  const policyDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-attack-policies-'));
  writeFileSync(join(policyDir, 'attack.yaml'), POLICY);
  const pg = await startEmbeddedPostgres({ dataDir });
  const sql = createSql(pg.url);
  await migrate(sql, join(ROOT_DIR, 'migrations'));
  const server = await startServer(join(BENCH_DIR, 'lib/gatehouse-server.mjs'), {
    // 2,000 waits need MAX_WAITS and MAX_CONNECTIONS above their defaults (512, 1024).
    env: {
      BENCH_DATABASE_URL: pg.url,
      BENCH_POLICY_DIR: policyDir,
      BENCH_POLICY_ENV: '',
      BENCH_LOG_LEVEL: 'warn',
      BENCH_MAX_WAITS: '2000',
      BENCH_MAX_CONNECTIONS: '4096',
    },
  });
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  /** @type {(method: string, path: string, token: string, body?: string) => Promise<{ status: number, text: string }>} */
  const call = (method, path, token, body) => http(server.port, agent, method, path, token, body);
  // The rest is filled in as the phases run.
  const result = /** @type {AttackResult} */ ({ rate, seconds, phases: {} });
  try {
    const victim = () =>
      runLoad(join(BENCH_DIR, 'lib/fixed-rate.mjs'), {
        host: '127.0.0.1',
        port: server.port,
        path: '/decide',
        body: VICTIM_BODY,
        headers: { authorization: `Bearer ${signToken({ sub: 'victim' })}`, 'content-type': 'application/json' },
        connections: 16,
        rate,
        duration: seconds,
        warmup: 1,
      });
    /** @type {(name: string, during?: () => Promise<void>) => Promise<void>} */
    const measure = async (name, during) => {
      const sampler = sampleRss(server.pid, 100);
      const before = memoryOf(server.pid).rssMB;
      const [load] = await Promise.all([victim(), during?.()]);
      const peak = sampler.stop();
      result.phases[name] = {
        p50: load.latencyMs.p50,
        p99: load.latencyMs.p99,
        max: load.latencyMs.max,
        answered: load.completed,
        sent: load.sent,
        rssBeforeMB: before,
        rssPeakMB: peak,
        statuses: load.statuses,
      };
      log(
        `${name}: victim /decide p50 ${fmt(load.latencyMs.p50, 2)} ms, p99 ${fmt(load.latencyMs.p99, 2)} ms, max ${fmt(load.latencyMs.max, 1)} ms (${fmtInt(load.completed)} of ${fmtInt(load.sent)}); Gatehouse RSS ${fmt(before, 0)} → peak ${fmt(peak, 0)} MB`,
      );
    };

    await measure('baseline');
    const rssBaseline = /** @type {Phase} */ (result.phases.baseline).rssPeakMB;

    // The attack. One caller, its own approvals.
    const attacker = signToken({ sub: 'attacker', team: 'x', agent: 'x' });
    const huge = 'x'.repeat(1024 * 1024 - 200);
    let refused = 0;
    for (let i = 0; i < 100; i++) {
      const res = await call(
        'POST',
        '/approvals',
        attacker,
        JSON.stringify({ tool: 'export_report', args: { n: i, blob: huge } }),
      );
      if (res.status === 413) refused++;
    }
    result.rssAfterHugeMB = memoryOf(server.pid).rssMB;
    log(`attacker: Gatehouse RSS after the refused ones ${fmt(result.rssAfterHugeMB, 0)} MB`);
    const largest = 'y'.repeat(65_536 - 40);
    /** @type {string[]} */
    const ids = [];
    for (let i = 0; i < 100; i++) {
      const res = await call(
        'POST',
        '/approvals',
        attacker,
        JSON.stringify({ tool: 'export_report', args: { n: i, blob: largest } }),
      );
      if (res.status !== 201) throw new Error(`filing a 64 KiB approval: ${res.status} ${res.text.slice(0, 200)}`);
      ids.push(JSON.parse(res.text).id);
    }
    const [{ stored }] = await sql`select count(*)::int as stored from approvals where requester_sub = 'attacker'`;
    result.rssAfterFilingMB = memoryOf(server.pid).rssMB;
    log(
      `attacker: ${refused} of 100 approvals of ~1 MiB refused (413); ${stored} stored of ~64 KiB; Gatehouse RSS now ${fmt(result.rssAfterFilingMB, 0)} MB`,
    );
    result.refusedHuge = refused;
    result.stored = stored;

    let stop = false;
    let listBytes = 0;
    let lists = 0;
    const reader = async () => {
      while (!stop) {
        const list = await call('GET', '/approvals?limit=200', attacker);
        listBytes = Math.max(listBytes, list.text.length);
        lists++;
        for (const id of ids.slice(0, 10)) await call('GET', `/approvals/${id}`, attacker);
      }
    };
    const polls = Array.from({ length: 6 }, () => call('GET', `/approvals/${ids[0]}?wait=60`, attacker));
    await measure('attack', async () => {
      const readers = [reader(), reader()];
      await sleep((seconds + 1) * 1000);
      stop = true;
      await Promise.all(readers);
    });
    const attack = /** @type {Phase} */ (result.phases.attack);
    attack.listBytes = listBytes;
    attack.lists = lists;
    result.rssGrowthMB = attack.rssPeakMB - rssBaseline;
    log(
      `attacker: ${lists} lists of its 100 approvals, ${fmtInt(listBytes)} bytes each; RSS growth over the baseline ${fmt(result.rssGrowthMB, 1)} MB`,
    );
    await call('POST', `/approvals/${ids[0]}/deny`, signToken({ sub: 'operator-1', roles: ['approver'] }), '{}');
    await Promise.all(polls);

    // 2,000 idle long-polls: 100 callers × 20 waits, each on its own approval; no other load.
    const waitAgent = new Agent({ keepAlive: false, maxSockets: Infinity });
    const callers = Array.from({ length: 100 }, (_, k) => signToken({ sub: `waiter-${k}` }));
    /** @type {{ token: string, id: string }[]} */
    const awaited = [];
    for (const token of callers) {
      const res = await call('POST', '/approvals', token, JSON.stringify({ tool: 'export_report', args: { n: 0 } }));
      awaited.push({ token, id: JSON.parse(res.text).id });
    }
    const waits = awaited.flatMap(({ token, id }) =>
      Array.from({ length: 20 }, () => http(server.port, waitAgent, 'GET', `/approvals/${id}?wait=60`, token)),
    );
    await sleep(3000); // every wait registered and checked once
    const idleSeconds = quick ? 5 : 15;
    const cpu0 = cpuSnapshot(dataDir, [server.pid]);
    await sleep(idleSeconds * 1000);
    const cpu = cpuDelta(cpu0, cpuSnapshot(dataDir, [server.pid]));
    result.idleWaits = {
      waits: waits.length,
      seconds: idleSeconds,
      gatehouseCpuSecPerSec: cpu.othersMs / 1000 / idleSeconds,
      postgresCpuSecPerSec: cpu.pgMs / 1000 / idleSeconds,
    };
    const idle = result.idleWaits;
    idle.totalCpuSecPerSec = idle.gatehouseCpuSecPerSec + idle.postgresCpuSecPerSec;
    log(
      `${waits.length} idle waits for ${idleSeconds} s: Gatehouse ${fmt(result.idleWaits.gatehouseCpuSecPerSec, 4)} CPU-s/s, PostgreSQL ${fmt(result.idleWaits.postgresCpuSecPerSec, 4)} CPU-s/s`,
    );
    const first = /** @type {{ token: string, id: string }} */ (awaited[0]);
    const tooMany = await call('GET', `/approvals/${first.id}?wait=60`, first.token);
    idle.twentyFirst = tooMany.status;
    for (const { id } of awaited)
      await call('POST', `/approvals/${id}/deny`, signToken({ sub: 'operator-1', roles: ['approver'] }), '{}');
    const answered = await Promise.all(waits);
    idle.answered = answered.filter((r) => r.status === 200).length;
    waitAgent.destroy();
  } finally {
    agent.destroy();
    await server.stop();
    await sql.end({ timeout: 5 });
    await pg.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(policyDir, { recursive: true, force: true });
  }
  const a = /** @type {Phase} */ (result.phases.attack);
  const totalCpu = result.idleWaits.totalCpuSecPerSec ?? Number.NaN;
  result.checks = [
    {
      target: `another caller's /decide p99 under the attack < ${TARGETS.victimP99Ms} ms (${rate}/s offered)`,
      value: `${fmt(a.p99, 2)} ms (baseline ${fmt(result.phases.baseline?.p99, 2)} ms)`,
      met: a.p99 < TARGETS.victimP99Ms && a.answered >= a.sent * 0.999,
    },
    {
      target: `Gatehouse RSS growth under the attack < ${TARGETS.rssGrowthMB} MB`,
      value: `${fmt(result.rssGrowthMB, 1)} MB`,
      met: result.rssGrowthMB < TARGETS.rssGrowthMB,
    },
    {
      target: `2,000 idle waits cost < ${TARGETS.idleWaitCpuSecPerSec} CPU-s/s (Gatehouse + PostgreSQL)`,
      value: `${fmt(totalCpu, 4)} CPU-s/s`,
      met: totalCpu < TARGETS.idleWaitCpuSecPerSec,
    },
  ];
  return result;
}

/**
 * One request; resolves with status and text (never rejects on an HTTP status).
 * @param {number} port
 * @param {Agent} agent
 * @param {string} method
 * @param {string} path
 * @param {string} token
 * @param {string} [body]
 * @returns {Promise<{ status: number, text: string }>}
 */
function http(port, agent, method, path, token, body) {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${token}` };
    if (body !== undefined)
      Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    const req = request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      /** @type {Buffer[]} */
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * @param {AttackResult} result
 * @param {(text: string) => void} [print]
 */
export function printAttack(result, print = console.log) {
  print(
    `\nOne caller's approvals against other callers: victim /decide at ${result.rate}/s for ${result.seconds} s per phase`,
  );
  print(
    table(
      ['phase', 'p50 ms', 'p99 ms', 'max ms', 'answered', 'RSS before MB', 'RSS peak MB'],
      Object.entries(result.phases).map(([name, p]) => [
        name,
        fmt(p.p50, 2),
        fmt(p.p99, 2),
        fmt(p.max, 1),
        `${fmtInt(p.answered)}/${fmtInt(p.sent)}`,
        fmt(p.rssBeforeMB, 0),
        fmt(p.rssPeakMB, 0),
      ]),
    ),
  );
  print(
    `\n${result.idleWaits.waits} idle waits: Gatehouse ${fmt(result.idleWaits.gatehouseCpuSecPerSec, 4)} + PostgreSQL ${fmt(result.idleWaits.postgresCpuSecPerSec, 4)} CPU-s/s; the 21st wait of one caller answered ${result.idleWaits.twentyFirst}; ${result.idleWaits.answered} waits answered by the denials`,
  );
  print('\nTargets');
  print(targetsTable(result.checks));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs();
  const result = await runAttack({ quick: args.quick });
  printAttack(result);
  if (args.json) writeFileSync(args.json, JSON.stringify(result, null, 2));
}
