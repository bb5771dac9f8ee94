// The stateful side of POST /inspect (docs/spec.md section 5.11): inspect() over the current policy
// set (pure, src/policy/inspect.ts), then, only when a result's review was asked for and the request
// cites an approval (`approval_id`), the database: the grant of exactly this call and this result
// consumed once (with an Idempotency-Key, in the key's transaction). One record per answer (./record.ts), with its stage and never the value. An
// inspection that cites nothing, or is not held for review, never awaits.
import { randomUUID } from 'node:crypto';
import type { TransactionSql } from 'postgres';
import type { IdempotencyClaim } from '../db/idempotency.js';
import { canonicalize } from '../json/canonical.js';
import { inspect, type InspectRequest, type InspectResult, type ResultInspection } from '../policy/inspect.js';
import { inspectMessage, spentReviewMessage } from '../policy/message.js';
import type { Identity } from '../policy/model.js';
import { deniedReason, standingOf, type ApprovalService, type CitedApproval } from '../approvals/service.js';
import { inspected, inspectionBody, nextStep, written, type Answer } from './answer.js';
import { approvalsOf, keysOf } from './limits.js';
import type { CallLog, EngineParts } from './parts.js';
import type { DecisionLine } from '../policy/record.js';
import { decisionLine, recorderOf, writeRecord, type Asked, type Recorder } from './record.js';

export interface InspectCall {
  readonly request: InspectRequest;
  readonly identity: Identity;
  /** The approval of this very result to redeem (`approval_id`, result stage only). */
  readonly approvalId?: string | undefined;
  /** The request's Idempotency-Key, read only by a redeem (a malformed key is the transport's 400). */
  readonly claim?: () => IdempotencyClaim | undefined;
  readonly log: CallLog;
}

export function inspectCall(parts: EngineParts, call: InspectCall): Answer | Promise<Answer> {
  const { request, identity, approvalId } = call;
  const decisionId = randomUUID();
  const started = process.hrtime.bigint();
  const set = parts.policies.current();
  const result = inspect(set, request, identity);
  const durationUs = Number(process.hrtime.bigint() - started) / 1000;
  const asked: Asked = { decisionId, request, set, identity, durationUs, approvalId };
  // Only a review asked for can be redeemed: any other answer is the inspection's, with nothing to await.
  if (approvalId === undefined || result.decision !== 'require_approval' || request.stage !== 'result') {
    const kind = result.approval === undefined ? undefined : { kind: result.approval.kind };
    const line = decisionLine(asked, result.decision, result.rule, parts.logArgs, kind);
    writeRecord(call.log, parts.metrics, parts.records?.writer ?? null, line, durationUs);
    return inspected(result, decisionId, result.decision === 'require_approval' ? nextStep(null) : undefined);
  }
  return redeemed(parts, { ...call, request }, approvalId, result, decisionId, recorderOf(parts, call.log, asked));
}

/**
 * A result held for review, citing `approvalId`: consumed when it is this caller's, granted,
 * unexpired and filed for exactly this call and this result (the same hash), in one statement;
 * otherwise answered as /decide answers such a citation (docs/spec.md section 5.3).
 */
async function redeemed(
  parts: EngineParts,
  call: InspectCall & { request: ResultInspection },
  approvalId: string,
  held: InspectResult,
  decisionId: string,
  recorder: Recorder,
): Promise<Answer> {
  const { request, identity } = call;
  const approvals = approvalsOf(parts.approvals);
  approvals.ensureReady();
  const asked = held.approval;
  if (asked === undefined) throw new Error('require_approval without its approval'); // inspect() always sets it
  const lineOf = (r: InspectResult): DecisionLine =>
    recorder.line(r.decision, r.rule, r.approval === undefined ? undefined : { kind: r.approval.kind });
  const claim = call.claim?.();
  if (claim === undefined) {
    // With the decision store on, the consume and its record in one transaction.
    const redeemed = (tx?: TransactionSql) => redeem(approvals, request, identity, approvalId, held, asked, tx);
    let line: DecisionLine | undefined;
    const { result, cited } =
      parts.records === null
        ? await redeemed()
        : await approvals.store.transaction(async (tx) => {
            const r = await redeemed(tx);
            line = lineOf(r.result);
            await recorder.insert(tx, line);
            return r;
          });
    recorder.write(line ?? lineOf(result));
    return inspected(result, decisionId, result.decision === 'require_approval' ? nextStep(cited) : undefined);
  }
  // The redeem and what the key keeps of it in one transaction: a retry whose answer was lost is
  // answered from it while the inspection made now still asks for exactly the approval it consumed.
  let line: DecisionLine | undefined;
  const answer = await keysOf(parts.keys).once(
    claim,
    async (tx) => {
      const { result, cited } = await redeem(approvals, request, identity, approvalId, held, asked, tx);
      line = lineOf(result);
      await recorder.insert(tx, line);
      const next = result.decision === 'require_approval' ? nextStep(cited) : undefined;
      const consumed = result.decision === 'allow' && result.approval?.status === 'consumed';
      return {
        answer: {
          status: result.decision === 'allow' ? 200 : 403,
          body: canonicalize(inspectionBody(result, decisionId, next)),
        },
        kept: consumed ? { kind: 'redeem', status: 200, decisionId, approvalId } : null,
      };
    },
    async (tx, kept) => {
      if (kept.kind !== 'redeem') return null;
      const a = await approvals.store.get(kept.approvalId, tx);
      if (a === null || a.requester.sub !== identity.user || a.status !== 'consumed' || a.hash !== asked.hash)
        return null;
      // Never outliving the grant: only within the time it could have been redeemed in.
      if (!(await approvals.store.stillAhead(a.expires_at, tx))) return null;
      const granted = grantedInspection(held, asked, request, a.id);
      // A keyed retry answered from what its key kept says so, as /decide's record does.
      line = { ...lineOf(granted), replayed: true, replayed_decision_id: kept.decisionId };
      return { status: 200, body: canonicalize(inspectionBody(granted, kept.decisionId)) };
    },
  );
  recorder.write(line ?? lineOf(held));
  return written(answer);
}

/** The allow of a result whose review `id` was granted and is now consumed. */
function grantedInspection(
  held: InspectResult,
  asked: NonNullable<InspectResult['approval']>,
  request: ResultInspection,
  id: string,
): InspectResult {
  const reason = `approval ${id} was granted by an operator`;
  // The review granted the result as it was shown; a redact guard's findings stay redacted.
  return {
    ...held,
    decision: 'allow',
    reason,
    message: inspectMessage('allow', { stage: 'result', tool: request.tool }, reason, held.redacted !== undefined),
    approval: { ...asked, id, status: 'consumed' },
  };
}

/** Consume the review, or say where the cited approval stands: /decide's answers to a citation (section 5.3). */
async function redeem(
  approvals: ApprovalService,
  request: ResultInspection,
  identity: Identity,
  approvalId: string,
  held: InspectResult,
  asked: NonNullable<InspectResult['approval']>,
  tx?: TransactionSql,
): Promise<{ result: InspectResult; cited: CitedApproval | null }> {
  const what = { stage: 'result' as const, tool: request.tool };
  const consumed = await approvals.store.consume(approvalId, { sub: identity.user }, asked.hash, tx);
  let result: InspectResult;
  let cited: CitedApproval | null = null;
  if (consumed.ok) {
    result = grantedInspection(held, asked, request, consumed.approval.id);
  } else {
    const standing = standingOf(consumed.approval, asked.hash);
    const ref = standing.is === 'unknown' ? undefined : { id: standing.approval.id, status: standing.approval.status };
    cited = standing.is === 'unknown' ? null : standing.cited;
    switch (standing.is) {
      case 'denied': {
        const reason = deniedReason(standing.approval);
        const { redacted: _r, findings: _f, ...rest } = held;
        result = {
          ...rest,
          decision: 'deny',
          reason,
          message: inspectMessage('deny', what, reason, false),
          approval: { ...asked, ...ref },
        };
        break;
      }
      case 'spent':
        result = {
          ...held,
          message: spentReviewMessage(request.tool, held.reason, standing.status),
          approval: { ...asked, ...ref },
        };
        break;
      case 'waiting':
        result = { ...held, approval: { ...asked, ...ref } };
        break;
      default:
        // Someone else's approval or none, or another call's or result's: the review is still needed
        // (a result's review is never amended).
        result = held;
    }
  }
  return { result, cited };
}
