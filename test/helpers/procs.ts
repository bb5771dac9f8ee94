// Child processes from /proc (Linux): what the test run started, to kill it outright.
import { readFileSync } from 'node:fs';

/** The direct children of pid; [] when there are none, the process is gone, or this is not Linux. */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter((s) => s !== '').map(Number);
  } catch {
    return [];
  }
}

/** SIGKILL a process, ignoring one that is already gone. */
export function kill9(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
