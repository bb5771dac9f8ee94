// What the decision log line records of a request beyond its outcome, so that a recorded decision can
// be decided again (`gatehouse replay`, `gatehouse cases`: docs/policy-changes.md): the environment
// and the caller's roles always; with LOG_ARGS the arguments, the token's claims, the context and the
// run view, secret-named keys redacted in all of them (docs/operations.md "Logs").
import type { JsonObject } from '../json/value.js';
import type { DecideRequest, DecisionResult, Identity } from '../policy/model.js';
import { redactSecrets } from './redact.js';

export function decisionFacts(logArgs: boolean, env: string | null, req: DecideRequest, identity: Identity): Record<string, unknown> {
  if (!logArgs) return { env, roles: identity.roles };
  return {
    env,
    roles: identity.roles,
    args: redactSecrets(req.args),
    claims: redactSecrets((identity.claims ?? {}) as JsonObject),
    ...(req.context !== undefined ? { context: redactSecrets(req.context) } : {}),
    ...(req.run !== undefined ? { run: redactSecrets(req.run as unknown as JsonObject) } : {}), // a run view is JSON data
  };
}

/** A require_approval's approval kind on its log line (a test case made from it checks the kind); nothing otherwise. */
export function approvalKindField(result: DecisionResult): Record<string, unknown> | undefined {
  return result.approval === undefined ? undefined : { kind: result.approval.kind };
}
