// The policy set being served, and its reload: the directory is loaded and validated completely,
// then swapped in with one assignment. A failed reload keeps the old set and is remembered for
// GET /policies. A decision reads `current()` once, so it finishes on the set it started with.
import { formatProblem, PolicyLoadError } from './errors.js';
import { loadPolicies, policyFileName } from './load.js';
import type { PolicySet } from './model.js';

export interface ReloadFailure {
  at: Date;
  problems: string[];
}

export interface LivePolicies {
  /** The directory (or file) loaded, as given (POLICY_DIR). */
  readonly dir: string;
  current(): PolicySet;
  loadedAt(): Date;
  lastFailure(): ReloadFailure | null;
  /** Reload from disk. Concurrent calls share one load; a call during a load queues one more. */
  reload(): Promise<{ ok: true } | { ok: false; problems: string[] }>;
}

export async function createLivePolicies(
  dir: string,
  env: string | null,
  now: () => Date = () => new Date(),
): Promise<LivePolicies> {
  let set = await loadPolicies(dir, { env });
  let loadedAt = now();
  let failure: ReloadFailure | null = null;
  let running: Promise<{ ok: true } | { ok: false; problems: string[] }> | null = null;
  let queued: Promise<{ ok: true } | { ok: false; problems: string[] }> | null = null;

  const loadOnce = async (): Promise<{ ok: true } | { ok: false; problems: string[] }> => {
    try {
      const next = await loadPolicies(dir, { env });
      set = next;
      loadedAt = now();
      failure = null;
      return { ok: true };
    } catch (err) {
      // Shown by GET /policies: files are named relative to the directory, as there.
      const problems =
        err instanceof PolicyLoadError
          ? err.problems.map((p) => formatProblem({ ...p, file: policyFileName(dir, p.file) }))
          : ['the policy directory could not be read'];
      failure = { at: now(), problems };
      return { ok: false, problems };
    }
  };

  const reload = (): Promise<{ ok: true } | { ok: false; problems: string[] }> => {
    if (running === null) {
      running = loadOnce().finally(() => {
        running = null;
      });
      return running;
    }
    // A load is under way and may have read the directory before the latest change: run one more
    // after it, shared by everyone who asks meanwhile (a storm of reload signals costs two loads).
    queued ??= running.then(() => {
      queued = null;
      return reload();
    });
    return queued;
  };

  return { dir, current: () => set, loadedAt: () => loadedAt, lastFailure: () => failure, reload };
}
