// What a CLI command decides with (`check`, `hash`): the policy set, its load problems reported on
// stderr, and the caller given as flags, as the token's claims would give it to the service.
import { servedPolicyEnvOf } from '../config.js';
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

/** The environment of a record or case that names none (`replay`, `test`): `--env`, else POLICY_ENV, no development default. */
export function envOf(values: { env?: string | undefined }): string | null {
  return values.env ?? (process.env.POLICY_ENV || null);
}

/**
 * The environment to load policies for as the service would serve them (`check`, `hash`): `--env`,
 * else the service's own choice, so that `check` sees what `npm start` serves.
 */
export function servedEnvOf(values: { env?: string | undefined }): { env: string | null; defaulted: boolean } {
  if (values.env !== undefined) return { env: values.env, defaulted: false };
  const env = servedPolicyEnvOf();
  return { env, defaulted: env !== null && !process.env.POLICY_ENV };
}

/** On stderr, when the development default chose the environment of policies that declare environments. */
export function noteDefaultedEnv(set: PolicySet, served: { env: string | null; defaulted: boolean }, io: Io): void {
  if (served.defaulted && set.files.some((f) => f.environments.length > 0)) {
    io.err(
      `POLICY_ENV is not set: loading the "${served.env}" environment, as npm start serves it outside production (--env E for another)\n`,
    );
  }
}

/** The identity `decide()` takes; a user the flags do not name is `cli-user`. */
export function callerIdentity(values: {
  user?: string | undefined;
  team?: string | undefined;
  agent?: string | undefined;
  role?: string[] | undefined;
}): Identity {
  return {
    user: values.user ?? 'cli-user',
    team: values.team ?? null,
    agent: values.agent ?? null,
    roles: values.role ?? [],
  };
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
