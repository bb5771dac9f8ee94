// @ts-check
// Runs every benchmark in sequence, each in a fresh process, and prints their tables and a summary
// of the issue's targets. `npm run bench` builds first (the benchmarks run dist/).
//
//   node bench/run.mjs [--quick] [--only micro,http,approvals,budgets,attack,startup,client,hook,decisions,shadow,pattern] [--wrk] [--json out.json] [--markdown out.md]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, ROOT_DIR } from './lib/procs.mjs';
import { fmt, markdown, metText, parseArgs, table } from './lib/stats.mjs';

const args = parseArgs();
/** @type {Record<string, string>} */
const scripts = {
  micro: 'micro.mjs',
  http: 'http.mjs',
  approvals: 'approvals.mjs',
  budgets: 'budgets.mjs',
  attack: 'attack.mjs',
  startup: 'startup.mjs',
  client: 'client.mjs',
  hook: 'hook.mjs',
  decisions: 'decisions.mjs',
  shadow: 'shadow.mjs',
  pattern: 'pattern-linear.mjs',
};
const only = typeof args.extra.only === 'string' ? args.extra.only.split(',') : Object.keys(scripts);
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-run-'));

function machine() {
  const info = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /^model name\s*:\s*(.*)$/m.exec(info)?.[1] ?? cpus()[0]?.model ?? 'unknown';
  return {
    cpuModel: model,
    cores: cpus().length,
    memoryGB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}

function commit() {
  const git = (/** @type {string[]} */ ...a) => spawnSync('git', a, { cwd: ROOT_DIR, encoding: 'utf8' });
  const head = git('rev-parse', '--short', 'HEAD');
  if (head.status !== 0) return 'unknown';
  const dirty = git('status', '--porcelain', '--untracked-files=no', '--', 'src').stdout.trim() !== '';
  return `${head.stdout.trim()}${dirty ? ' + uncommitted changes in src/' : ''}`;
}

const started = Date.now();
/**
 * What each benchmark wrote with --json (its `checks` at least), and the run's own figures.
 * @type {{ machine: ReturnType<typeof machine>, commit: string, date: string, quick: boolean, loadBefore: number[], loadAfter?: number[], seconds?: number, results: Record<string, { checks?: import('./lib/stats.mjs').Check[], seconds?: number }> }}
 */
const out = {
  machine: machine(),
  commit: commit(),
  date: new Date().toISOString(),
  quick: args.quick,
  loadBefore: loadavg(),
  results: {},
};
console.log(
  `Gatehouse benchmarks${args.quick ? ' (quick)' : ''} at ${out.commit}, ${out.date}: ${out.machine.cpuModel}, ${out.machine.cores} cores, Node ${out.machine.node}; load average ${out.loadBefore.map((x) => fmt(x)).join(' ')}`,
);
if (out.loadBefore[0] > 0.5)
  console.log('WARNING: the machine is busy (1-minute load average above 0.5): figures will be low and noisy.');

try {
  for (const name of only) {
    const script = scripts[name];
    if (!script) throw new Error(`unknown benchmark ${name}`);
    console.log(`\n=== ${name} ===`);
    const json = join(dir, `${name}.json`);
    const extra = [
      ...(args.quick ? ['--quick'] : []),
      ...(name === 'http' && args.extra.wrk ? ['--wrk'] : []),
      '--json',
      json,
    ];
    const t0 = Date.now();
    // The child prints its progress and its tables; its JSON feeds the summary below.
    const child = spawnSync(process.execPath, [join(BENCH_DIR, script), ...extra], {
      cwd: ROOT_DIR,
      stdio: ['ignore', 'inherit', 'inherit'],
      timeout: 15 * 60_000,
    });
    if (child.status !== 0) {
      console.log(`${name} failed (exit ${child.status}${child.signal ? `, ${child.signal}` : ''})`);
      process.exitCode = 1;
      continue;
    }
    out.results[name] = JSON.parse(readFileSync(json, 'utf8'));
    const seconds = (Date.now() - t0) / 1000;
    out.results[name].seconds = seconds;
    console.log(`(${name}: ${fmt(seconds, 0)} s)`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const loadAfter = loadavg();
const seconds = (Date.now() - started) / 1000;
out.loadAfter = loadAfter;
out.seconds = seconds;
const checks = Object.entries(out.results).flatMap(([name, r]) => (r.checks ?? []).map((c) => ({ bench: name, ...c })));
const header = ['benchmark', 'target', 'measured', 'met'];
const rows = checks.map((c) => [c.bench, c.target, c.value, metText(c)]);
const targets = checks.filter((c) => c.met !== null);
console.log(`\n=== Targets ===\n${table(header, rows)}`);
console.log(
  `\n${targets.filter((c) => c.met).length} of ${targets.length} targets met; ${fmt(seconds, 0)} s in all; load average after ${loadAfter.map((x) => fmt(x)).join(' ')}`,
);
if (args.json) writeFileSync(args.json, JSON.stringify(out, null, 2));
if (args.markdown) writeFileSync(args.markdown, markdown(header, rows) + '\n');
