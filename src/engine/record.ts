// A decision's record, built once per answered /decide or /inspect: the log line (docs/operations.md "Logs") and,
// with DECISION_STORE, the decision store's row (src/records/writer.ts) are this one typed value.
// Beyond the outcome it holds what lets a recorded decision be decided again (`gatehouse replay`,
// `gatehouse cases`: docs/policy-changes.md): the environment and the caller's roles always; with
// LOG_ARGS the arguments, the token's claims, the context and the run view, secret-named keys
// redacted in all of them.
import type { CallLog, DecisionRecords } from './parts.js';
import type { JsonObject } from '../json/value.js';
import type { DecideRequest, DecisionResult, Identity, PolicySet } from '../policy/model.js';
import type { InspectRequest, InspectResult } from '../policy/inspect.js';
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

/** What a record of POST /inspect says of its request, beside its outcome. */
export interface Inspected {
  readonly decisionId: string;
  readonly request: InspectRequest;
  readonly set: PolicySet;
  readonly identity: Identity;
  readonly durationUs: number;
  readonly approvalId: string | undefined;
}

/**
 * The record of one POST /inspect answer: as a /decide call's, with `stage`. The value inspected (the
 * result, the model's content) is never in it, not even with LOG_ARGS: a record is no copy of what a
 * guard withheld. A model stage has no tool: `tool` names the stage.
 */
export function inspectionLine(
  asked: Inspected,
  decision: InspectResult['decision'],
  rule: string,
  logArgs: boolean,
  kind?: string,
): DecisionLine {
  const { request: req, set, identity } = asked;
  return {
    decision_id: asked.decisionId,
    tool: req.stage === 'result' ? req.tool : req.stage,
    decision,
    rule,
    ...(kind !== undefined ? { kind } : {}),
    policies: set.digests,
    user: identity.user,
    team: identity.team,
    agent: identity.agent,
    duration_us: Math.round(asked.durationUs * 10) / 10,
    stage: req.stage,
    ...(asked.approvalId !== undefined ? { approval_id: asked.approvalId } : {}),
    ...(req.run?.id !== undefined ? { run_id: req.run.id } : {}),
    ...facts(logArgs, set.env, { args: req.stage === 'result' ? req.args : undefined, ...scene(req) }, identity),
  };
}

/** The run view and the context, as given. */
function scene(req: InspectRequest): Pick<DecideRequest, 'run' | 'context'> {
  return {
    ...(req.run !== undefined ? { run: req.run } : {}),
    ...(req.context !== undefined ? { context: req.context } : {}),
  };
}

function facts(
  logArgs: boolean,
  env: string | null,
  req: { args?: JsonObject | undefined } & Pick<DecideRequest, 'run' | 'context'>,
  identity: Identity,
): Partial<DecisionLine> {
  if (!logArgs) return { env, roles: identity.roles };
  return {
    env,
    roles: identity.roles,
    ...(req.args !== undefined ? { args: redactObject(req.args) } : {}),
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
  // /inspect's are labelled with their stage; /decide's series keep the two labels they always had.
  metrics.decisions.inc(
    line.stage === undefined
      ? { decision: line.decision, rule: line.rule }
      : { decision: line.decision, rule: line.rule, stage: line.stage },
  );
  metrics.decideSeconds.observe(durationUs / 1e6);
  log.info(line, 'decision');
  records?.push(line); // DECISION_STORE: queued, written off the hot path (src/records/writer.ts)
}
