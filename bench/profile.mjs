// @ts-check
// Where the time of one POST /decide goes: Gatehouse (or the echo server) under autocannon load with
// V8's sampling profiler on, then the CPU per request by package and by function (inclusive), from
// the samples taken after the first request. The profiler adds its own overhead (figures run
// 15-30% high); compare rows with each other, not with the un-profiled req/s of bench/http.mjs.
// Not part of `npm run bench`.
//
//   node bench/profile.mjs [--server gatehouse|echo] [--duration S] [--top N] [--log sync|async]
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { DECIDE_TEXT, signToken } from './lib/bodies.mjs';
import { BENCH_DIR, ROOT_DIR, cpuTimeMs, runLoad, stopChild, taskset } from './lib/procs.mjs';
import { fmt, parseArgs } from './lib/stats.mjs';

const args = parseArgs();
const server = args.extra.server === 'echo' ? 'echo' : 'gatehouse';
const duration = Number(args.extra.duration ?? 8);
const top = Number(args.extra.top ?? 40);
const pinned = cpus().length >= 2 && taskset();

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-profile-'));
try {
  const script = join(BENCH_DIR, server === 'echo' ? 'lib/echo-server.mjs' : 'lib/gatehouse-server.mjs');
  const nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`, script];
  const log = openSync(join(dir, 'decisions.log'), 'w');
  const child = spawn(pinned || process.execPath, pinned ? ['-c', '0', process.execPath, ...nodeArgs] : nodeArgs, {
    cwd: ROOT_DIR,
    env: { ...process.env, BENCH_LOG_DEST: args.extra.log === 'async' ? 'async' : 'sync' },
    stdio: ['ignore', log, 'inherit', 'ipc'],
  });
  closeSync(log);
  /** @type {{ port: number, pid: number }} */
  const { port, pid } = await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    child.on(
      'message',
      (/** @type {{ type?: string, port: number, pid: number } | null} */ m) => m?.type === 'listening' && resolve(m),
    );
  });
  child.removeAllListeners('exit');
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${signToken()}` };
  const cpu0 = cpuTimeMs(pid);
  const res = await runLoad(
    join(BENCH_DIR, 'lib/load.mjs'),
    { url: `http://127.0.0.1:${port}/decide`, body: DECIDE_TEXT, headers, connections: 100, duration },
    { cpu: pinned ? 1 : undefined },
  );
  const cpuUs = ((cpuTimeMs(pid) - cpu0) * 1000) / res.total;
  await stopChild(child);
  console.log(
    `${server}: ${fmt(res.reqPerSec, 0)} req/s with the profiler on; ${fmt(cpuUs, 1)} µs of server CPU per request (all threads)`,
  );
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`no .cpuprofile written in ${dir}`);
  report(JSON.parse(readFileSync(join(dir, file), 'utf8')), res.total);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * A V8 CPU profile (the .cpuprofile format), reduced to what this report reads.
 * @typedef {{ functionName: string, url: string }} CallFrame
 * @typedef {{ id: number, callFrame: CallFrame, children?: number[] }} ProfileNode
 * @typedef {{ nodes: ProfileNode[], samples: number[], timeDeltas: number[] }} Profile
 */

/**
 * @param {Profile} profile
 * @param {number} requests
 */
function report(profile, requests) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  // Every id a sample or a parent link names is a node of the profile.
  const node = (/** @type {number} */ id) => /** @type {ProfileNode} */ (byId.get(id));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (/** @type {CallFrame} */ cf) => {
    const u = cf.url;
    if (!u) return cf.functionName || '(native)';
    const m = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(u);
    if (m) return m[1];
    if (u.includes('/dist/')) return `gatehouse ${u.replace(/.*\/dist\//, '')}`;
    if (u.startsWith('node:')) return `node:${u.slice(5).split('/').pop()}`;
    return u.replace(/.*\/bench\//, 'bench/');
  };
  const inRequest = (/** @type {number} */ id) => {
    for (let c = id; c !== undefined; c = parent.get(c))
      if (node(c).callFrame.functionName === 'parserOnIncoming') return true;
    return false;
  };
  const self = new Map();
  const inclusive = new Map();
  let busy = 0;
  let started = false;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    const id = profile.samples[i];
    if (!started && !(started = inRequest(id))) continue; // start-up is not a request's cost
    const cf = node(id).callFrame;
    if (cf.functionName === '(idle)') continue;
    busy += dt;
    self.set(label(cf), (self.get(label(cf)) ?? 0) + dt);
    const seen = new Set();
    for (let c = id; c !== undefined; c = parent.get(c)) {
      const f = node(c).callFrame;
      const key = `${f.functionName || '(anonymous)'}  [${label(f)}]`;
      if (!seen.has(key)) {
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + dt);
      }
    }
  }
  const rows = (/** @type {Map<string, number>} */ m, /** @type {number} */ n) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${fmt(v / requests, 2).padStart(8)} µs  ${k}`)
      .join('\n');
  console.log(
    `\nprofiled busy time: ${fmt(busy / requests, 1)} µs per request\n\nself time by package or file (µs per request)\n${rows(self, 30)}`,
  );
  inclusive.delete('(root)  [(root)]');
  console.log(`\ninclusive time by function (µs per request)\n${rows(inclusive, top)}`);
}
