// A decision's record, built once per answered /decide: the log line (docs/operations.md "Logs") and,
// with DECISION_STORE, the decision store's row (src/records/writer.ts) are this one typed value.
// Beyond the outcome it holds what lets a recorded decision be decided again (`gatehouse replay`,
// `gatehouse cases`: docs/policy-changes.md): the environment and the caller's roles always; with
// LOG_ARGS the arguments, the token's claims, the context and the run view, secret-named keys
// redacted in all of them.
import type { CallLog, DecisionRecords } from './parts.js';
import type { JsonObject } from '../json/value.js';
import type { DecideRequest, DecisionResult, Identity, PolicySet } from '../policy/model.js';
import type { DecisionLine } from '../policy/record.js';
import type { Metrics } from './metrics.js';
import { redactSecrets } from './redact.js';

/** What a record says of one request, beside its outcome. */
export interface Asked {
  readonly decisionId: string;
  readonly request: DecideRequest;
  readonly set: PolicySet;
  readonly identity: Identity;
  readonly durationUs: number;
  readonly approvalId: string | undefined;
}

/** What the record adds to the outcome: a replay, a counted call's limits, a require_approval's kind. */
export type Beside = Pick<DecisionLine, 'kind' | 'replayed' | 'replayed_decision_id' | 'budgets'>;

export function decisionLine(
  asked: Asked,
  decision: DecisionResult['decision'],
  rule: string,
  logArgs: boolean,
  beside?: Beside,
): DecisionLine {
  const { request: req, set, identity } = asked;
  return {
    decision_id: asked.decisionId,
    tool: req.tool,
    decision,
    rule,
    policies: set.digests,
    user: identity.user,
    team: identity.team,
    agent: identity.agent,
    duration_us: Math.round(asked.durationUs * 10) / 10,
    ...(asked.approvalId !== undefined ? { approval_id: asked.approvalId } : {}),
    ...(req.run?.id !== undefined ? { run_id: req.run.id } : {}),
    ...facts(logArgs, set.env, req, identity), // the set that decided, not one reloaded since
    ...beside,
  };
}

function facts(logArgs: boolean, env: string | null, req: DecideRequest, identity: Identity): Partial<DecisionLine> {
  if (!logArgs) return { env, roles: identity.roles };
  return {
    env,
    roles: identity.roles,
    args: redactObject(req.args),
    claims: redactObject((identity.claims ?? {}) as JsonObject),
    ...(req.context !== undefined ? { context: redactObject(req.context) } : {}),
    ...(req.run !== undefined
      ? { run: redactSecrets(req.run as unknown as JsonObject) as unknown as DecisionLine['run'] }
      : {}), // a run view is JSON data
  };
}

/** An object redacted is an object (redactSecrets keeps every container's kind). */
const redactObject = (value: JsonObject): JsonObject => redactSecrets(value) as JsonObject;

/** A require_approval's approval kind on its record (a test case made from it checks the kind); nothing otherwise. */
export function kindOf(result: DecisionResult): Beside | undefined {
  return result.approval === undefined ? undefined : { kind: result.approval.kind };
}

/** Logs the record (before the answer is sent), queues it for the store, counts it. */
export function writeRecord(
  log: CallLog,
  metrics: Metrics,
  records: DecisionRecords | null,
  line: DecisionLine,
  durationUs: number,
): void {
  metrics.decisions.inc({ decision: line.decision, rule: line.rule });
  metrics.decideSeconds.observe(durationUs / 1e6);
  log.info(line, 'decision');
  records?.push(line); // DECISION_STORE: queued, written off the hot path (src/records/writer.ts)
}
