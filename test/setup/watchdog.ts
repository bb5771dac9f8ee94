// A vitest reporter that turns a hung test run into a prompt, named failure. Test and hook timeouts
// cannot fire in a worker whose event loop is blocked (a synchronous loop that never ends), and the
// run would then wait for that worker forever. This reporter lives in the main process, whose event
// loop stays free: when no test starts or ends for STALL_MS it prints what was running, kills every
// process the run started (workers, PostgreSQL servers, spawned services) and exits with HUNG_EXIT
// (75, EX_TEMPFAIL), which .ci/run tells apart from failed tests.
// STALL_MS is far above any legitimate gap (testTimeout 30 s, hookTimeout 60 s): it bounds a hang,
// it does not measure speed.
import { execFileSync } from 'node:child_process';
import type { Reporter, TestCase, TestModule } from 'vitest/node';
import { childPids, kill9 } from '../helpers/process.js';

const STALL_MS = 4 * 60_000;
const CHECK_EVERY_MS = 10_000;
const HUNG_EXIT = 75;

export default class Watchdog implements Reporter {
  private lastProgress = Date.now();
  private readonly runningModules = new Set<string>();
  private readonly runningTests = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;

  onInit(): void {
    this.timer = setInterval(() => this.check(), CHECK_EVERY_MS);
    this.timer.unref();
  }

  onTestModuleStart(module: TestModule): void {
    this.progress();
    this.runningModules.add(module.moduleId);
  }

  onTestModuleEnd(module: TestModule): void {
    this.progress();
    this.runningModules.delete(module.moduleId);
  }

  onTestCaseReady(test: TestCase): void {
    this.progress();
    this.runningTests.set(test.id, `${test.module.moduleId} > ${test.fullName}`);
  }

  onTestCaseResult(test: TestCase): void {
    this.progress();
    this.runningTests.delete(test.id);
  }

  onHookStart(): void {
    this.progress();
  }

  onHookEnd(): void {
    this.progress();
  }

  onTestRunEnd(): void {
    clearInterval(this.timer);
  }

  private progress(): void {
    this.lastProgress = Date.now();
  }

  private check(): void {
    const quiet = Date.now() - this.lastProgress;
    if (quiet < STALL_MS) return;
    const running = [...this.runningTests.values(), ...[...this.runningModules].map((m) => `${m} (module)`)];
    process.stderr.write(
      `\nwatchdog: no test started or finished for ${Math.round(quiet / 1000)} s; the run is hung.\n` +
        `still running:\n${running.map((r) => `  ${r}`).join('\n') || '  (nothing reported)'}\n` +
        `processes:\n${processTree()}\n`,
    );
    killDescendants(process.pid);
    process.exit(HUNG_EXIT);
  }
}

function killDescendants(pid: number): void {
  for (const child of childPids(pid)) {
    killDescendants(child);
    kill9(child);
  }
}

function processTree(): string {
  try {
    return execFileSync('ps', ['-eo', 'pid,ppid,etime,stat,pcpu,args', '--forest'], {
      encoding: 'utf8',
      timeout: 5_000,
    })
      .split('\n')
      .filter((line) => /node|postgres|vitest/.test(line))
      .map((line) => line.slice(0, 200))
      .join('\n');
  } catch {
    return '  (ps unavailable)';
  }
}
