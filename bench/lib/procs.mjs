// @ts-check
// Child processes of the benchmarks: servers (forked, with IPC, optionally pinned to a CPU with
// taskset) and load generators (run to completion, JSON on stdout), and /proc memory sampling.
import { spawn, execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));
export const ROOT_DIR = fileURLToPath(new URL('../..', import.meta.url));

/** @type {string | null | undefined} */
let tasksetPath;
/** @returns {string | null} */
export function taskset() {
  if (tasksetPath === undefined) {
    try {
      tasksetPath = execFileSync('sh', ['-c', 'command -v taskset'], { encoding: 'utf8' }).trim() || null;
    } catch {
      tasksetPath = null;
    }
  }
  return tasksetPath;
}

/**
 * The command line for `node script`, pinned to `cpu` when taskset exists and there are ≥ 2 CPUs.
 * @param {string} script
 * @param {number | null | undefined} cpu
 * @param {string[]} [nodeArgs]
 */
function nodeCommand(script, cpu, nodeArgs = []) {
  const args = [...nodeArgs, script];
  const pin = taskset();
  if (cpu !== undefined && cpu !== null && pin)
    return { cmd: pin, args: ['-c', String(cpu), process.execPath, ...args] };
  return { cmd: process.execPath, args };
}

/**
 * Start a server script; resolves when it reports {type: 'listening'} over IPC.
 * stdout goes to `stdoutFd` (a file descriptor) or is ignored.
 * @param {string} script
 * @param {{ env?: NodeJS.ProcessEnv, cpu?: number | null, stdoutFd?: number | 'ignore', timeoutMs?: number }} [options]
 * @returns {Promise<Server>}
 */
export function startServer(script, { env = {}, cpu, stdoutFd = 'ignore', timeoutMs = 30_000 } = {}) {
  const { cmd, args } = nodeCommand(script, cpu);
  const child = spawn(cmd, args, {
    cwd: ROOT_DIR,
    env: { ...process.env, ...env },
    stdio: ['ignore', stdoutFd, 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not start within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code} before listening`));
    });
    child.on('message', (/** @type {any} */ msg) => {
      // any: what the server script sends over IPC; `type` tells its shape
      if (msg?.type !== 'listening') return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({
        child,
        port: msg.port,
        pid: msg.pid, // the node process itself (child.pid may be taskset's, which execs node: the same pid)
        timings: msg.timings,
        stop: () => stopChild(child),
      });
    });
  });
}

/**
 * @typedef {object} Server
 * @property {import('node:child_process').ChildProcess} child
 * @property {number} port
 * @property {number} pid
 * @property {Record<string, number> | undefined} timings
 * @property {() => Promise<void>} stop
 */

/**
 * SIGTERM, then SIGKILL after a grace period. Resolves when the process has exited.
 * @param {import('node:child_process').ChildProcess} child
 * @param {number} [graceMs]
 * @returns {Promise<void>}
 */
export function stopChild(child, graceMs = 10_000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * Run a load script with a JSON config to completion; parse its last stdout line.
 * @param {string} script
 * @param {{ duration?: number, warmup?: number, [key: string]: unknown }} config
 * @param {{ cpu?: number | null, timeoutMs?: number }} [options]
 * @returns {Promise<any>} any: the script's own JSON report, whose shape each caller knows
 */
export function runLoad(script, config, { cpu, timeoutMs } = {}) {
  const { cmd, args } = nodeCommand(script, cpu);
  const child = spawn(cmd, [...args, JSON.stringify(config)], { cwd: ROOT_DIR, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  const limit = timeoutMs ?? ((config.duration ?? 10) + (config.warmup ?? 0) + 30) * 1000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not finish within ${limit} ms`));
    }, limit);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const line = out.trim().split('\n').pop();
      if (code !== 0 || !line) return reject(new Error(`${script} exited with ${code}: ${out}`));
      resolve(JSON.parse(line));
    });
  });
}

/**
 * VmRSS and VmHWM (peak) of a process, in MB, from /proc (Linux).
 * @param {number} pid
 */
export function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (/** @type {string} */ name) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMB: kb('VmRSS') / 1024, peakMB: kb('VmHWM') / 1024 };
  } catch {
    return { rssMB: NaN, peakMB: NaN };
  }
}

/**
 * Sample VmRSS every `everyMs` until stopped; returns {stop(): maxMB}.
 * @param {number} pid
 * @param {number} [everyMs]
 */
export function sampleRss(pid, everyMs = 200) {
  let max = 0;
  const timer = setInterval(() => {
    const { rssMB } = memoryOf(pid);
    if (rssMB > max) max = rssMB;
  }, everyMs);
  return {
    stop() {
      clearInterval(timer);
      const { rssMB } = memoryOf(pid);
      return Math.max(max, Number.isFinite(rssMB) ? rssMB : 0);
    },
  };
}

/** @type {number | undefined} */
let clockTicks;
/**
 * CPU time (user + system, all threads) of a process so far, in ms, from /proc/<pid>/stat.
 * @param {number} pid
 * @returns {number}
 */
export function cpuTimeMs(pid) {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at ") ": utime is field 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / (clockTicks ?? 100);
  } catch {
    return NaN;
  }
}

/** @type {(ms: number) => Promise<void>} */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The postmaster of the cluster in dataDir and its children (backends, WAL writer, ...), from /proc.
 * @param {string} dataDir
 * @returns {number[]}
 */
export function postgresPids(dataDir) {
  try {
    const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const pids = [postmaster];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) pids.push(Number(name));
      } catch {
        // gone meanwhile
      }
    }
    return pids;
  } catch {
    return [];
  }
}

/**
 * Pins the cluster in dataDir to `cpu`: the postmaster and its children now; the backends it forks
 * later inherit it. False when taskset is missing.
 * @param {string} dataDir
 * @param {number} cpu
 */
export function pinPostgres(dataDir, cpu) {
  const pin = taskset();
  if (!pin) return false;
  for (const pid of postgresPids(dataDir))
    execFileSync(pin, ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
  return true;
}

/** @typedef {{ self: number, pg: Map<number, number>, others: number[] }} CpuSnapshot */

/**
 * CPU ms so far of: this process, the cluster's processes (backends come and go: summed per pid), others.
 * @param {string} dataDir
 * @param {number[]} [otherPids]
 * @returns {CpuSnapshot}
 */
export function cpuSnapshot(dataDir, otherPids = []) {
  const self = process.cpuUsage();
  const pg = new Map(postgresPids(dataDir).map((pid) => [pid, cpuTimeMs(pid)]));
  return { self: (self.user + self.system) / 1000, pg, others: otherPids.map(cpuTimeMs) };
}

/**
 * @param {CpuSnapshot} before
 * @param {CpuSnapshot} after
 */
export function cpuDelta(before, after) {
  let pg = 0;
  for (const [pid, ms] of after.pg) pg += ms - (before.pg.get(pid) ?? 0); // a new backend counts from 0
  return {
    selfMs: after.self - before.self,
    pgMs: pg,
    othersMs: after.others.reduce((a, ms, k) => a + ms - before.others[k], 0),
  };
}
