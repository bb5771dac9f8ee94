// The caller a CLI command decides for (`check --tool`, `hash`): who, in which environment, given as
// flags, as the token's claims would give it to the service.
import type { Identity } from '../policy/model.js';

export const CALLER_OPTIONS = {
  env: { type: 'string' },
  user: { type: 'string' },
  team: { type: 'string' },
  agent: { type: 'string' },
} as const;

/** The identity `decide()` takes; a user the flags do not name is `cli-user`. */
export function callerIdentity(values: { user?: string | undefined; team?: string | undefined; agent?: string | undefined; role?: string[] | undefined }): Identity {
  return { user: values.user ?? 'cli-user', team: values.team ?? null, agent: values.agent ?? null, roles: values.role ?? [] };
}
