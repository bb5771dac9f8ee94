// What a CLI command decides with (`check`, `hash`): the policy set, its load problems reported on
// stderr, and the caller given as flags, as the token's claims would give it to the service.
import { formatProblem, PolicyLoadError } from '../policy/errors.js';
import { loadPolicies } from '../policy/load.js';
import type { Identity, PolicySet } from '../policy/model.js';
import type { Io } from './io.js';

export const CALLER_OPTIONS = {
  env: { type: 'string' },
  user: { type: 'string' },
  team: { type: 'string' },
  agent: { type: 'string' },
} as const;

/** The environment to load for: `--env`, else POLICY_ENV as the service reads it (no development default here). */
export function envOf(values: { env?: string | undefined }): string | null {
  return values.env ?? (process.env.POLICY_ENV || null);
}

/** The identity `decide()` takes; a user the flags do not name is `cli-user`. */
export function callerIdentity(values: {
  user?: string | undefined;
  team?: string | undefined;
  agent?: string | undefined;
  role?: string[] | undefined;
}): Identity {
  return { user: values.user ?? 'cli-user', team: values.team ?? null, agent: values.agent ?? null, roles: values.role ?? [] };
}

/** The policies at `target` for `env`, or null after printing every load problem (the caller exits 2). */
export async function loadPoliciesOrReport(target: string, env: string | null, io: Io): Promise<PolicySet | null> {
  try {
    return await loadPolicies(target, { env });
  } catch (err) {
    if (!(err instanceof PolicyLoadError)) throw err;
    for (const p of err.problems) io.err(`${formatProblem(p)}\n`);
    io.err(`${err.problems.length} problem(s); nothing loaded\n`);
    return null;
  }
}
