// @ts-check
// HTTP benchmark: Gatehouse's POST /decide (JWT, strict body, validation, decide over the example
// policies, decision log at info level) against a bare Fastify 5 echo of the same body, loaded
// alternately (A B A B) from a separate load-generator process with the same body, headers and
// connections; then a fixed offered rate for the p99; RSS idle and under load.
//
// With taskset (util-linux) and 2+ CPUs, servers are pinned to CPU 0 and the load generator to CPU 1.
// The decision log: synchronous, on stdout, as src/service.ts sets it up (src/log.ts), with the
// server's stdout redirected to a file in the temp directory (counted, then deleted).
//
//   node bench/http.mjs [--quick] [--rounds N] [--duration S] [--connections C] [--rate R] [--log sync|async] [--wrk] [--json out.json]
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, createReadStream, mkdtempSync, openSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DECIDE_TEXT, signToken } from './lib/bodies.mjs';
import { BENCH_DIR, cpuTimeMs, memoryOf, runLoad, sampleRss, sleep, startServer, taskset } from './lib/procs.mjs';
import { fmt, fmtInt, median, parseArgs, table, targetsTable } from './lib/stats.mjs';

export const TARGETS = { ratio: 0.5, p99Ms: 5, rate: 5000, rssMB: 150 };

// Pinned only where taskset exists and there are two CPUs to share out.
const SERVER_CPU = cpus().length >= 2 && taskset() ? 0 : undefined;
const LOAD_CPU = cpus().length >= 2 && taskset() ? 1 : undefined;

/** @param {string} path */
async function countLines(path) {
  let n = 0;
  for await (const chunk of /** @type {AsyncIterable<Buffer>} */ (createReadStream(path)))
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n++;
  return n;
}

/** @typedef {{ p50: number, p90?: number, p99: number, p999?: number, max: number, mean?: number }} Latency */
/** @typedef {{ reqPerSec: number, total: number, duration: number, latencyMs: Latency, non2xx: number, errors: number, rssMB?: number }} Closed load.mjs's report */
/** @typedef {Closed & { round: number, server: string, cpuUsPerReq: number, busy: number, rssMB: number }} Round */
/** @typedef {{ achievedPerSec: number, sent: number, completed: number, latencyMs: Latency, statuses: Record<string, number>, cpuUsPerReq: number, busy: number, rssMB: number }} Open fixed-rate.mjs's report, with the server's CPU and RSS */
/** @typedef {{ reqPerSec: number, p50: number, p99: number, cpuUsPerReq: number, busy: number }} Side */
/** @typedef {{ reqPerSec: number, p50: string | undefined, p99: string | undefined, non2xx: number, cpuUsPerReq: number, busy: number }} WrkRow */
/** @typedef {{ gatehouse: WrkRow[], echo: WrkRow[], ratio: number, cpuRatio: number }} Wrk */
/** @typedef {{ rssMB: number, peakMB: number }} Memory */
/**
 * @typedef {object} HttpResult
 * @property {{ rounds: number, duration: number, connections: number, warmup: number, rate: number, rateDuration: number, logDest: string, pinned: boolean, bodyBytes: number }} config
 * @property {Round[]} rounds
 * @property {{ status: number, decision: string, rule: string, bytes: number }} gatehouseAnswer
 * @property {{ gatehouse: Memory, echo: Memory }} idle
 * @property {{ gatehouse: Side, echo: Side, ratio: number, pairRatios: number[], cpuRatio: number }} summary
 * @property {Record<string, { openLoop: Open, autocannon?: Closed }>} fixedRate
 * @property {{ sampledMax: number, vmHWM: number }} peakRssMB
 * @property {{ gatehouse: Memory, echo: Memory }} idleAfter
 * @property {Wrk | null} [wrk]
 * @property {number} logLines
 * @property {number} logBytes
 * @property {import('./lib/stats.mjs').Check[]} checks
 */

/**
 * @param {{ quick?: boolean, rounds?: number, duration?: number, connections?: number, rate?: number, wrk?: boolean, logDest?: string, log?: (line: string) => void }} [options]
 * @returns {Promise<HttpResult>}
 */
export async function runHttp({
  quick = false,
  rounds,
  duration,
  connections = 100,
  rate = TARGETS.rate,
  wrk = false,
  logDest = 'sync',
  log = console.log,
} = {}) {
  rounds ??= quick ? 2 : 4;
  duration ??= quick ? 2 : 10;
  const warmup = quick ? 1 : 3;
  const rateDuration = quick ? 3 : 10;

  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-http-'));
  const logPath = join(dir, 'decisions.log');
  const logFd = openSync(logPath, 'w');
  const token = signToken();
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };

  const gh = await startServer(join(BENCH_DIR, 'lib/gatehouse-server.mjs'), {
    cpu: SERVER_CPU,
    stdoutFd: logFd,
    env: { BENCH_LOG_DEST: logDest },
  });
  const echo = await startServer(join(BENCH_DIR, 'lib/echo-server.mjs'), { cpu: SERVER_CPU });
  closeSync(logFd);
  /** @type {Record<string, import('./lib/procs.mjs').Server>} */
  const servers = { gatehouse: gh, echo };
  // The rest is filled in as the phases run.
  const result = /** @type {HttpResult} */ (
    /** @type {unknown} */ ({
      config: {
        rounds,
        duration,
        connections,
        warmup,
        rate,
        rateDuration,
        logDest,
        pinned: SERVER_CPU !== undefined,
        bodyBytes: DECIDE_TEXT.length,
      },
      rounds: [],
    })
  );
  try {
    // Both answer the benchmark request as expected before any load.
    for (const [name, s] of Object.entries(servers)) {
      const res = await fetch(`http://127.0.0.1:${s.port}/decide`, { method: 'POST', headers, body: DECIDE_TEXT });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${name} answered ${res.status}: ${text}`);
      if (name === 'gatehouse') {
        const body = JSON.parse(text);
        result.gatehouseAnswer = { status: res.status, decision: body.decision, rule: body.rule, bytes: text.length };
        log(
          `gatehouse answers ${res.status} ${body.decision} by ${body.rule} (${text.length} bytes); echo answers ${DECIDE_TEXT.length} bytes`,
        );
      }
    }
    await sleep(500);
    result.idle = { gatehouse: memoryOf(gh.pid), echo: memoryOf(echo.pid) };
    log(`idle RSS: gatehouse ${fmt(result.idle.gatehouse.rssMB, 1)} MB, echo ${fmt(result.idle.echo.rssMB, 1)} MB`);

    /** @type {(s: import('./lib/procs.mjs').Server, extra: { duration: number, overallRate?: number }) => Promise<any>} any: load.mjs's report */
    const load = (s, extra) =>
      runLoad(
        join(BENCH_DIR, 'lib/load.mjs'),
        {
          url: `http://127.0.0.1:${s.port}/decide`,
          body: DECIDE_TEXT,
          headers,
          connections,
          ...extra,
        },
        { cpu: LOAD_CPU },
      );

    for (const [name, s] of Object.entries(servers)) {
      await load(s, { duration: warmup });
      log(`warmed up ${name} (${warmup} s)`);
    }

    let maxRss = 0;
    for (let r = 1; r <= rounds; r++) {
      for (const name of ['gatehouse', 'echo']) {
        const s = /** @type {import('./lib/procs.mjs').Server} */ (servers[name]);
        const sampler = name === 'gatehouse' ? sampleRss(gh.pid) : null;
        const cpu0 = cpuTimeMs(s.pid);
        const res = await load(s, { duration });
        const cpuMs = cpuTimeMs(s.pid) - cpu0;
        const rssMB = sampler ? sampler.stop() : memoryOf(s.pid).rssMB;
        if (sampler) maxRss = Math.max(maxRss, rssMB);
        // Server CPU per answered request (user + system, all its threads): a cost that another
        // process competing for the CPU does not change much, unlike req/s. Busy: CPU time / wall time.
        const cpuUsPerReq = (cpuMs * 1000) / res.total;
        const busy = cpuMs / (res.duration * 1000);
        result.rounds.push({ round: r, server: name, ...res, cpuUsPerReq, busy, rssMB });
        log(
          `round ${r} ${name.padEnd(9)} ${fmtInt(res.reqPerSec).padStart(7)} req/s  p50 ${res.latencyMs.p50} ms  p99 ${res.latencyMs.p99} ms  server CPU ${fmt(cpuUsPerReq, 1)} µs/req, busy ${fmt(busy * 100, 0)}%  non-2xx ${res.non2xx}  errors ${res.errors}`,
        );
      }
    }
    const rps = (/** @type {string} */ name) => result.rounds.filter((x) => x.server === name).map((x) => x.reqPerSec);
    const lat = (/** @type {string} */ name, /** @type {'p50' | 'p99'} */ p) =>
      median(result.rounds.filter((x) => x.server === name).map((x) => x.latencyMs[p]));
    /** @type {number[]} */
    const pairRatios = [];
    for (let r = 1; r <= rounds; r++) {
      // Each round ran both servers.
      const a = /** @type {Round} */ (result.rounds.find((x) => x.round === r && x.server === 'gatehouse'));
      const b = /** @type {Round} */ (result.rounds.find((x) => x.round === r && x.server === 'echo'));
      pairRatios.push(a.reqPerSec / b.reqPerSec);
    }
    const cpu = (/** @type {string} */ name) =>
      median(result.rounds.filter((x) => x.server === name).map((x) => x.cpuUsPerReq));
    const busy = (/** @type {string} */ name) =>
      median(result.rounds.filter((x) => x.server === name).map((x) => x.busy));
    result.summary = {
      gatehouse: {
        reqPerSec: median(rps('gatehouse')),
        p50: lat('gatehouse', 'p50'),
        p99: lat('gatehouse', 'p99'),
        cpuUsPerReq: cpu('gatehouse'),
        busy: busy('gatehouse'),
      },
      echo: {
        reqPerSec: median(rps('echo')),
        p50: lat('echo', 'p50'),
        p99: lat('echo', 'p99'),
        cpuUsPerReq: cpu('echo'),
        busy: busy('echo'),
      },
      ratio: median(rps('gatehouse')) / median(rps('echo')),
      pairRatios,
      // The same comparison by server CPU per request (echo's cost / Gatehouse's cost).
      cpuRatio: cpu('echo') / cpu('gatehouse'),
    };
    if (result.summary.echo.busy < 0.9)
      log(
        `NOTE: the echo server was only ${fmt(result.summary.echo.busy * 100, 0)}% busy: the load generator, not the server, set its req/s, so the req/s ratio flatters Gatehouse; the CPU-per-request ratio does not depend on that.`,
      );
    log(
      `ratio gatehouse/echo: ${fmt(result.summary.ratio, 3)} by req/s (per round: ${pairRatios.map((x) => fmt(x, 3)).join(', ')}); ${fmt(result.summary.cpuRatio, 3)} by server CPU per request (${fmt(cpu('echo'), 1)} vs ${fmt(cpu('gatehouse'), 1)} µs)`,
    );

    // Fixed offered rate: the open-loop generator (latency from the scheduled time, in µs), and
    // autocannon's overallRate for comparison.
    result.fixedRate = {};
    for (const name of ['gatehouse', 'echo']) {
      const s = /** @type {import('./lib/procs.mjs').Server} */ (servers[name]);
      const sampler = name === 'gatehouse' ? sampleRss(gh.pid) : null;
      const cpu0 = cpuTimeMs(s.pid);
      /** @type {Open} */
      const open = await runLoad(
        join(BENCH_DIR, 'lib/fixed-rate.mjs'),
        {
          host: '127.0.0.1',
          port: s.port,
          path: '/decide',
          body: DECIDE_TEXT,
          headers,
          connections,
          rate,
          duration: rateDuration,
          warmup: 1,
        },
        { cpu: LOAD_CPU },
      );
      const cpuMs = cpuTimeMs(s.pid) - cpu0;
      open.cpuUsPerReq = (cpuMs * 1000) / (open.sent + rate); // the warm-up second included
      open.busy = cpuMs / ((rateDuration + 1) * 1000);
      open.rssMB = sampler ? sampler.stop() : memoryOf(s.pid).rssMB;
      if (sampler) maxRss = Math.max(maxRss, open.rssMB);
      log(
        `fixed ${rate}/s ${name.padEnd(9)} open-loop: achieved ${fmtInt(open.achievedPerSec)}/s  p50 ${fmt(open.latencyMs.p50, 3)} ms  p99 ${fmt(open.latencyMs.p99, 3)} ms  p99.9 ${fmt(open.latencyMs.p999, 3)} ms  server CPU ${fmt(open.cpuUsPerReq, 1)} µs/req, busy ${fmt(open.busy * 100, 0)}%  statuses ${JSON.stringify(open.statuses)}`,
      );
      /** @type {{ openLoop: Open, autocannon?: Closed }} */
      const fixed = { openLoop: open };
      result.fixedRate[name] = fixed;
      if (quick) continue;
      const acSampler = name === 'gatehouse' ? sampleRss(gh.pid) : null;
      const ac = await load(s, { duration: rateDuration, overallRate: rate });
      if (acSampler) maxRss = Math.max(maxRss, (ac.rssMB = acSampler.stop()));
      log(
        `fixed ${rate}/s ${name.padEnd(9)} autocannon overallRate: ${fmtInt(ac.reqPerSec)}/s  p50 ${ac.latencyMs.p50} ms  p99 ${ac.latencyMs.p99} ms`,
      );
      fixed.autocannon = ac;
    }

    result.peakRssMB = { sampledMax: maxRss, vmHWM: memoryOf(gh.pid).peakMB };
    await sleep(quick ? 1000 : 2000);
    result.idleAfter = { gatehouse: memoryOf(gh.pid), echo: memoryOf(echo.pid) };
    log(
      `gatehouse RSS: idle ${fmt(result.idle.gatehouse.rssMB, 1)} MB, peak under load ${fmt(result.peakRssMB.vmHWM, 1)} MB (VmHWM; sampled max ${fmt(maxRss, 1)} MB), idle after ${fmt(result.idleAfter.gatehouse.rssMB, 1)} MB`,
    );

    if (wrk) result.wrk = runWrk(servers, headers, quick ? 3 : duration, connections, log);
  } finally {
    await gh.stop();
    await echo.stop();
    try {
      result.logLines = await countLines(logPath);
      result.logBytes = statSync(logPath).size;
      log(
        `decision log: ${fmtInt(result.logLines)} lines, ${fmt(result.logBytes / 1048576, 1)} MB written to ${logPath} (deleted)`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  const fr = /** @type {{ openLoop: Open }} */ (result.fixedRate.gatehouse).openLoop;
  result.checks = [
    // Met only when both measures agree: req/s flatters Gatehouse when the echo is generator-bound.
    {
      target: `/decide ≥ ${TARGETS.ratio}× bare Fastify echo, same run (by req/s and by server CPU per request)`,
      value: `${fmt(result.summary.ratio, 3)}x by req/s (${fmtInt(result.summary.gatehouse.reqPerSec)} vs ${fmtInt(result.summary.echo.reqPerSec)}); ${fmt(result.summary.cpuRatio, 3)}x by CPU/req`,
      met: result.summary.ratio >= TARGETS.ratio && result.summary.cpuRatio >= TARGETS.ratio,
    },
    {
      target: `p99 ≤ ${TARGETS.p99Ms} ms at ${rate} req/s offered`,
      value: `${fmt(fr.latencyMs.p99, 3)} ms (${fmtInt(fr.completed)} of ${fmtInt(fr.sent)} answered, ${fmtInt(fr.achievedPerSec)}/s)`,
      met: fr.latencyMs.p99 <= TARGETS.p99Ms && fr.completed >= fr.sent * 0.999,
    },
    {
      target: `peak RSS under load ≤ ${TARGETS.rssMB} MB`,
      value: `${fmt(result.peakRssMB.vmHWM, 1)} MB`,
      met: result.peakRssMB.vmHWM <= TARGETS.rssMB,
    },
  ];
  return result;
}

/**
 * Optional: the same A B comparison with wrk (Debian's `wrk`), which the figures that set the targets used.
 * @param {Record<string, import('./lib/procs.mjs').Server>} servers
 * @param {Record<string, string>} headers
 * @param {number} duration
 * @param {number} connections
 * @param {(line: string) => void} log
 * @returns {Wrk | null}
 */
function runWrk(servers, headers, duration, connections, log) {
  if (spawnSync('sh', ['-c', 'command -v wrk']).status !== 0) {
    log('wrk not installed (apt-get install -y wrk): skipped');
    return null;
  }
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-wrk-'));
  const script = join(dir, 'post.lua');
  writeFileSync(
    script,
    [
      'wrk.method = "POST"',
      `wrk.body = ${JSON.stringify(DECIDE_TEXT)}`,
      ...Object.entries(headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`),
    ].join('\n'),
  );
  /** @type {Record<string, WrkRow[]>} */
  const out = {};
  try {
    for (const name of ['gatehouse', 'echo', 'gatehouse', 'echo']) {
      const server = /** @type {import('./lib/procs.mjs').Server} */ (servers[name]);
      const args = [
        '-t1',
        `-c${connections}`,
        `-d${duration}s`,
        '--latency',
        '-s',
        script,
        `http://127.0.0.1:${server.port}/decide`,
      ];
      const pin = LOAD_CPU !== undefined ? taskset() : null;
      /** @type {[string, string[]]} */
      const cmd = pin ? [pin, ['-c', String(LOAD_CPU), 'wrk', ...args]] : ['wrk', args];
      const cpu0 = cpuTimeMs(server.pid);
      const text = execFileSync(cmd[0], cmd[1], { encoding: 'utf8', timeout: (duration + 30) * 1000 });
      const cpuMs = cpuTimeMs(server.pid) - cpu0;
      const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1]);
      const total = Number(/(\d+) requests in/.exec(text)?.[1]);
      const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(text)?.[1] ?? 0);
      const p50 = /50%\s+([\d.]+\w+)/.exec(text)?.[1];
      const p99 = /99%\s+([\d.]+\w+)/.exec(text)?.[1];
      const cpuUsPerReq = (cpuMs * 1000) / total;
      const busy = cpuMs / (duration * 1000);
      (out[name] ??= []).push({ reqPerSec: rps, p50, p99, non2xx, cpuUsPerReq, busy });
      log(
        `wrk ${name.padEnd(9)} ${fmtInt(rps).padStart(7)} req/s  p50 ${p50}  p99 ${p99}  server CPU ${fmt(cpuUsPerReq, 1)} µs/req, busy ${fmt(busy * 100, 0)}%  non-2xx ${non2xx}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const gatehouse = out.gatehouse ?? [];
  const echo = out.echo ?? [];
  const ratio = median(gatehouse.map((x) => x.reqPerSec)) / median(echo.map((x) => x.reqPerSec));
  const cpuRatio = median(echo.map((x) => x.cpuUsPerReq)) / median(gatehouse.map((x) => x.cpuUsPerReq));
  log(`wrk ratio gatehouse/echo: ${fmt(ratio, 3)} by req/s, ${fmt(cpuRatio, 3)} by server CPU per request`);
  return { gatehouse, echo, ratio, cpuRatio };
}

/**
 * @param {HttpResult} result
 * @param {(text: string) => void} [print]
 */
export function printHttp(result, print = console.log) {
  const c = result.config;
  print(
    `\nHTTP: POST /decide, ${c.bodyBytes}-byte body, ${c.connections} connections, ${c.rounds} rounds × ${c.duration} s alternating (autocannon, separate process${c.pinned ? '; server on CPU 0, load on CPU 1' : ''})`,
  );
  print(
    table(
      [
        'round',
        'server',
        'req/s',
        'p50 ms',
        'p99 ms',
        'server CPU µs/req',
        'server busy',
        'RSS MB',
        'non-2xx',
        'errors',
      ],
      result.rounds.map((r) => [
        r.round,
        r.server,
        fmtInt(r.reqPerSec),
        r.latencyMs.p50,
        r.latencyMs.p99,
        fmt(r.cpuUsPerReq, 1),
        `${fmt(r.busy * 100, 0)}%`,
        fmt(r.rssMB, 0),
        r.non2xx,
        r.errors,
      ]),
    ),
  );
  const s = result.summary;
  print(
    table(
      ['server', 'req/s (median)', 'p50 ms', 'p99 ms', 'ratio to echo', 'CPU µs/req', 'ratio by CPU'],
      [
        [
          'bare Fastify 5 echo',
          fmtInt(s.echo.reqPerSec),
          s.echo.p50,
          s.echo.p99,
          '1.000',
          fmt(s.echo.cpuUsPerReq, 1),
          '1.000',
        ],
        [
          'Gatehouse /decide',
          fmtInt(s.gatehouse.reqPerSec),
          s.gatehouse.p50,
          s.gatehouse.p99,
          fmt(s.ratio, 3),
          fmt(s.gatehouse.cpuUsPerReq, 1),
          fmt(s.cpuRatio, 3),
        ],
      ],
    ),
  );
  if (s.echo.busy < 0.9)
    print(
      `Note: the echo server was ${fmt(s.echo.busy * 100, 0)}% busy (median): limited by the load generator, so the req/s ratio flatters Gatehouse; the ratio by server CPU per request does not depend on the generator.`,
    );
  print(`\nFixed offered rate ${c.rate} req/s for ${c.rateDuration} s`);
  print(
    table(
      [
        'server',
        'generator',
        'achieved/s',
        'p50 ms',
        'p99 ms',
        'p99.9 ms',
        'max ms',
        'server CPU µs/req',
        'server busy',
      ],
      Object.entries(result.fixedRate).flatMap(([name, f]) => [
        [
          name,
          'open-loop (µs clock)',
          fmtInt(f.openLoop.achievedPerSec),
          fmt(f.openLoop.latencyMs.p50, 3),
          fmt(f.openLoop.latencyMs.p99, 3),
          fmt(f.openLoop.latencyMs.p999, 3),
          fmt(f.openLoop.latencyMs.max, 1),
          fmt(f.openLoop.cpuUsPerReq, 1),
          `${fmt(f.openLoop.busy * 100, 0)}%`,
        ],
        ...(f.autocannon
          ? [
              [
                name,
                'autocannon overallRate (ms clock)',
                fmtInt(f.autocannon.reqPerSec),
                f.autocannon.latencyMs.p50,
                f.autocannon.latencyMs.p99,
                '',
                f.autocannon.latencyMs.max,
                '',
                '',
              ],
            ]
          : []),
      ]),
    ),
  );
  print(
    `\nRSS (MB): gatehouse idle ${fmt(result.idle.gatehouse.rssMB, 1)}, peak ${fmt(result.peakRssMB.vmHWM, 1)} (VmHWM), idle after load ${fmt(result.idleAfter.gatehouse.rssMB, 1)}; echo idle ${fmt(result.idle.echo.rssMB, 1)}, after ${fmt(result.idleAfter.echo.rssMB, 1)} (peak ${fmt(result.idleAfter.echo.peakMB, 1)})`,
  );
  print(
    `Decision log: ${fmtInt(result.logLines)} lines (${fmt(result.logBytes / 1048576, 1)} MB), ${c.logDest === 'async' ? 'pino destination with sync: false' : 'src/log.ts (synchronous)'} → stdout → file`,
  );
  const wrk = result.wrk;
  if (wrk) {
    print(`\nwrk (1 thread, ${c.connections} connections), alternating`);
    print(
      table(
        ['server', 'req/s', 'p50', 'p99', 'server CPU µs/req', 'server busy', 'non-2xx'],
        /** @type {const} */ (['gatehouse', 'echo']).flatMap((name) =>
          wrk[name].map((x) => [
            name,
            fmtInt(x.reqPerSec),
            x.p50,
            x.p99,
            fmt(x.cpuUsPerReq, 1),
            `${fmt(x.busy * 100, 0)}%`,
            x.non2xx,
          ]),
        ),
      ),
    );
    print(`wrk ratio gatehouse/echo: ${fmt(wrk.ratio, 3)} by req/s, ${fmt(wrk.cpuRatio, 3)} by server CPU per request`);
  }
  print('\nTargets');
  print(targetsTable(result.checks));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs();
  const e = args.extra;
  const result = await runHttp({
    quick: args.quick,
    rounds: e.rounds ? Number(e.rounds) : undefined,
    duration: e.duration ? Number(e.duration) : undefined,
    connections: e.connections ? Number(e.connections) : 100,
    rate: e.rate ? Number(e.rate) : TARGETS.rate,
    wrk: Boolean(e.wrk),
    logDest: e.log === 'async' ? 'async' : 'sync',
  });
  printHttp(result);
  if (args.json) writeFileSync(args.json, JSON.stringify(result, null, 2));
}
