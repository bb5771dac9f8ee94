// The stateful side of POST /inspect (docs/spec.md section 5.11): inspect() over the current policy
// set (pure, src/policy/inspect.ts), then, only when a result's review was asked for and the request
// cites an approval (`approval_id`), the database: the grant of exactly this call and this result
// consumed once. One record per answer (./record.ts), with its stage and never the value. An
// inspection that cites nothing, or is not held for review, never awaits.
import { randomUUID } from 'node:crypto';
import { inspect, type InspectRequest, type InspectResult } from '../policy/inspect.js';
import { inspectMessage, spentReviewMessage } from '../policy/message.js';
import type { Identity } from '../policy/model.js';
import type { CitedApproval } from '../approvals/service.js';
import { inspected, nextStep, type Answer } from './answer.js';
import { approvalsOf } from './limits.js';
import type { CallLog, EngineParts } from './parts.js';
import { inspectionLine, writeRecord, type Inspected } from './record.js';

export interface InspectCall {
  readonly request: InspectRequest;
  readonly identity: Identity;
  /** The approval of this very result to redeem (`approval_id`, result stage only). */
  readonly approvalId?: string | undefined;
  readonly log: CallLog;
}

export function inspectCall(parts: EngineParts, call: InspectCall): Answer | Promise<Answer> {
  const { request, identity, approvalId } = call;
  const decisionId = randomUUID();
  const started = process.hrtime.bigint();
  const set = parts.policies.current();
  const result = inspect(set, request, identity);
  const durationUs = Number(process.hrtime.bigint() - started) / 1000;
  const asked: Inspected = { decisionId, request, set, identity, durationUs, approvalId };
  const record = (r: InspectResult): void =>
    writeRecord(
      call.log,
      parts.metrics,
      parts.records?.writer ?? null,
      inspectionLine(asked, r.decision, r.rule, parts.logArgs, r.approval?.kind),
      durationUs,
    );
  // Only a review asked for can be redeemed: any other answer is the inspection's, with nothing to await.
  if (approvalId === undefined || result.decision !== 'require_approval' || request.stage !== 'result') {
    record(result);
    return inspected(result, decisionId, result.decision === 'require_approval' ? nextStep(null) : undefined);
  }
  return redeemed(parts, request, identity, approvalId, result, decisionId, record);
}

/**
 * A result held for review, citing `approvalId`: consumed when it is this caller's, granted,
 * unexpired and filed for exactly this call and this result (the same hash), in one statement;
 * otherwise answered as /decide answers such a citation (docs/spec.md section 5.3).
 */
async function redeemed(
  parts: EngineParts,
  request: InspectRequest & { stage: 'result' },
  identity: Identity,
  approvalId: string,
  held: InspectResult,
  decisionId: string,
  record: (r: InspectResult) => void,
): Promise<Answer> {
  const approvals = approvalsOf(parts.approvals);
  approvals.ensureReady();
  const asked = held.approval;
  if (asked === undefined) throw new Error('require_approval without its approval'); // inspect() always sets it
  const what = { stage: 'result' as const, tool: request.tool };
  const consumed = await approvals.store.consume(approvalId, { sub: identity.user }, asked.hash);
  let result: InspectResult;
  let cited: CitedApproval | null = null;
  if (consumed.ok) {
    const a = consumed.approval;
    const reason = `approval ${a.id} was granted by an operator`;
    // The review granted the result as it was shown; a redact guard's findings stay redacted.
    result = {
      ...held,
      decision: 'allow',
      reason,
      message: inspectMessage('allow', what, reason, held.redacted !== undefined),
      approval: { ...asked, id: a.id, status: 'consumed' },
    };
  } else if (consumed.approval === null) {
    // Someone else's approval, or none: nothing is said of it; the review is still needed.
    result = held;
  } else {
    const a = consumed.approval;
    const sameRequest = a.hash === asked.hash;
    cited = { id: a.id, status: a.status, expiresAt: a.expires_at, sameRequest };
    const ref = { id: a.id, status: a.status };
    if (a.status === 'denied') {
      // Only the operator's message for the agent reaches the model; the note is for the record.
      const reason = `an operator denied approval ${a.id}${a.decision_message ? `: ${a.decision_message}` : ''}`;
      const { redacted: _r, findings: _f, ...rest } = held;
      result = {
        ...rest,
        decision: 'deny',
        reason,
        message: inspectMessage('deny', what, reason, false),
        approval: { ...asked, ...ref },
      };
    } else if (!sameRequest) {
      // Another call's or another result's approval: a changed result needs a new review.
      result = held;
    } else if (a.status === 'consumed' || a.status === 'expired' || a.status === 'cancelled') {
      result = {
        ...held,
        message: spentReviewMessage(request.tool, held.reason, a.status),
        approval: { ...asked, ...ref },
      };
    } else {
      result = { ...held, approval: { ...asked, ...ref } };
    }
  }
  record(result);
  return inspected(result, decisionId, result.decision === 'require_approval' ? nextStep(cited) : undefined);
}
