// @ts-check
// `gatehouse hook claude-code` end to end, as Claude Code runs it: a fresh `node dist/main.js hook
// claude-code` process per tool call, the PreToolUse input on stdin, an allowed call (`git status`
// under the example Claude Code policy) decided by a Gatehouse process on 127.0.0.1 (the benchmarks'
// server, no database: an allowed call never touches one). Beside it, bare `node -e 0`: what any
// Node process costs on this machine. The two alternate, run by run, after a warm-up; the figures
// are the median wall time from spawn to exit, and the CPU time per run (the children's user +
// system time, from this process's own /proc/self/stat as each child is reaped).
//
//   node bench/hook.mjs [--quick] [--runs N] [--cli OTHER/dist/main.js] [--json out.json]
//
// --cli times another build's hook in the same way (an older commit's, for a before and after).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { signToken } from './lib/bodies.mjs';
import { BENCH_DIR, ROOT_DIR, startServer } from './lib/procs.mjs';
import { fmt, median, parseArgs, table, targetsTable } from './lib/stats.mjs';

export const TARGETS = { hookMs: 150 };

const INPUT = JSON.stringify({
  session_id: 'bench-session',
  transcript_path: '/home/ann/.claude/projects/shop/transcript.jsonl',
  cwd: '/home/ann/shop',
  permission_mode: 'default',
  hook_event_name: 'PreToolUse',
  tool_name: 'Bash',
  tool_input: { command: 'git status', description: 'Show the working tree status' },
  tool_use_id: 'toolu_bench',
});

/** CPU time (user + system) of this process's reaped children so far, in clock ticks. */
function childTicks() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[13]) + Number(fields[14]); // cutime, cstime (fields 16 and 17 of proc(5))
}

/**
 * One process to its exit: wall ms, CPU ticks, and what it printed.
 * @param {string[]} args
 * @param {{ env: NodeJS.ProcessEnv, stdin: string }} options
 * @returns {Promise<{ wallMs: number, ticks: number, code: number | null, out: string }>}
 */
function run(args, { env, stdin }) {
  return new Promise((resolve, reject) => {
    const ticks = childTicks();
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { cwd: ROOT_DIR, env, stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ wallMs: performance.now() - t0, ticks: childTicks() - ticks, code, out }));
    child.stdin.end(stdin);
  });
}

/** @param {{ quick?: boolean, runs?: number, cli?: string, log?: (line: string) => void }} [options] */
export async function runHook({
  quick = false,
  runs = quick ? 5 : 30,
  cli = join(ROOT_DIR, 'dist', 'main.js'),
  log = console.log,
} = {}) {
  const state = mkdtempSync(join(tmpdir(), 'gatehouse-bench-hook-'));
  const server = await startServer(join(BENCH_DIR, 'lib/gatehouse-server.mjs'), {
    env: { BENCH_POLICY_DIR: 'policies/examples/claude-code.yaml', BENCH_POLICY_ENV: '', BENCH_LOG_LEVEL: 'warn' },
  });
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? state,
    GATEHOUSE_URL: `http://127.0.0.1:${server.port}`,
    GATEHOUSE_TOKEN: signToken({ sub: 'claude-bench', agent: 'claude-code' }),
    GATEHOUSE_STATE_DIR: state,
    CLAUDE_PROJECT_DIR: '/home/ann/shop',
  };
  const kinds = {
    bare: () => run(['-e', '0'], { env, stdin: '' }),
    hook: async () => {
      const r = await run([cli, 'hook', 'claude-code'], { env, stdin: INPUT });
      const decision = r.code === 0 ? JSON.parse(r.out).hookSpecificOutput?.permissionDecision : undefined;
      if (decision !== 'allow') throw new Error(`the hook did not allow the call (exit ${r.code}): ${r.out}`);
      return r;
    },
  };
  /** @type {Record<string, number[]>} */
  const samples = { bare: [], hook: [] };
  /** @type {Record<string, number>} */
  const ticks = { bare: 0, hook: 0 };
  try {
    for (let k = 0; k < 2; k++) for (const fn of Object.values(kinds)) await fn(); // fills the file cache
    for (let k = 0; k < runs; k++) {
      for (const [name, fn] of Object.entries(kinds)) {
        const r = await fn();
        samples[name].push(r.wallMs);
        ticks[name] += r.ticks;
      }
    }
  } finally {
    await server.stop();
    rmSync(state, { recursive: true, force: true });
  }
  const hz = 100; // USER_HZ: the unit of cutime and cstime on Linux
  const row = (/** @type {string} */ name) => ({
    median: median(samples[name]),
    min: Math.min(...samples[name]),
    max: Math.max(...samples[name]),
    cpuMs: (ticks[name] * 1000) / hz / runs,
  });
  /** @type {{ runs: number, bare: ReturnType<typeof row>, hook: ReturnType<typeof row>, checks?: import('./lib/stats.mjs').Check[] }} */
  const result = { runs, bare: row('bare'), hook: row('hook') };
  log(
    table(
      ['process', 'runs', 'median ms', 'min ms', 'max ms', 'CPU ms per run'],
      [
        [
          'node -e 0',
          runs,
          fmt(result.bare.median, 0),
          fmt(result.bare.min, 0),
          fmt(result.bare.max, 0),
          fmt(result.bare.cpuMs, 0),
        ],
        [
          'gatehouse hook claude-code (allow)',
          runs,
          fmt(result.hook.median, 0),
          fmt(result.hook.min, 0),
          fmt(result.hook.max, 0),
          fmt(result.hook.cpuMs, 0),
        ],
      ],
    ),
  );
  const checks = [
    {
      target: `Claude Code hook, an allowed call end to end ≤ ${TARGETS.hookMs} ms (median)`,
      value: `${fmt(result.hook.median, 0)} ms (node -e 0: ${fmt(result.bare.median, 0)} ms; CPU ${fmt(result.hook.cpuMs, 0)} against ${fmt(result.bare.cpuMs, 0)} ms)`,
      met: result.hook.median <= TARGETS.hookMs,
    },
  ];
  result.checks = checks;
  log(`\nTargets\n${targetsTable(checks)}`);
  return result;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs();
  const runs = args.extra.runs === undefined ? undefined : Number(args.extra.runs);
  if (runs !== undefined && !(Number.isInteger(runs) && runs >= 1 && runs <= 200))
    throw new Error('--runs must be a whole number from 1 to 200');
  const result = await runHook({
    quick: args.quick,
    ...(runs ? { runs } : {}),
    ...(typeof args.extra.cli === 'string' ? { cli: args.extra.cli } : {}),
  });
  if (args.json) writeFileSync(args.json, JSON.stringify(result, null, 2));
}
