// What an Idempotency-Key keeps of an answer, and the answer a retry gets from it (docs/spec.md
// section 5.3). The retry has been decided again for its own identity before any of this runs; a
// kept act answers it only when that decision still stands behind it, so a kept answer never
// authorizes anything by itself. The row is bound to the identity and the body (src/db/idempotency.ts).
import type { TransactionSql } from 'postgres';
import type { KeptAnswer } from '../db/idempotency.js';
import { approvalCovers, askedOf, asRedeemed, grantedResult, type ApprovalService } from '../approvals/service.js';
import type { Approval } from '../approvals/approval.js';
import { approvalHash } from '../json/canonical.js';
import type { CitedApprovalView, DecideRequest, DecisionResult, Identity } from '../policy/model.js';

/**
 * What a /decide answer keeps: an allow that changed something (a grant consumed, a call counted) is
 * a reference to it; any other answer changed nothing, and a retry decides afresh.
 */
export function keptOfDecision(result: DecisionResult, decisionId: string, counted: boolean): KeptAnswer | null {
  if (result.decision !== 'allow') return null;
  if (result.approval?.status === 'consumed' && result.approval.id !== undefined) {
    return { kind: 'redeem', status: 200, decisionId, approvalId: result.approval.id };
  }
  return counted ? { kind: 'allow', status: 200, decisionId } : null;
}

/**
 * The allow a /decide retry is answered from a kept act, or null when the decision made now does not
 * stand behind it. A counted allow: the call is allowed now. A consumed grant: the approval is this
 * caller's, consumed, within the time it could have been redeemed in (GRANT_TTL after the grant),
 * and the call is allowed now or asks for what the approval holds (approvalCovers).
 */
export async function replayedDecision(
  approvals: ApprovalService | null,
  tx: TransactionSql,
  kept: KeptAnswer,
  fresh: DecisionResult,
  request: DecideRequest,
  identity: Identity,
  withCited?: (cited: CitedApprovalView) => DecisionResult,
): Promise<{ result: DecisionResult; decisionId: string } | null> {
  if (kept.kind === 'allow') return fresh.decision === 'allow' ? { result: fresh, decisionId: kept.decisionId } : null;
  if (kept.kind !== 'redeem' || approvals === null) return null;
  // Consumed as amended, it answered the amended call.
  const own = await ownApproval(approvals, tx, kept.approvalId, identity);
  const a = own === null ? null : asRedeemed(own);
  if (a === null || a.status !== 'consumed') return null;
  // Consumed by an allow that read `$approval`: decided now with the approval as it stood when
  // granted (it is consumed, so the retry's own decision had no `$approval`), within its time.
  const asGranted = fresh.decision === 'allow' || withCited === undefined ? null : grantedView(a, request);
  if (asGranted !== null && (await approvals.store.stillAhead(a.expires_at, tx))) {
    const again = withCited!(asGranted); // asGranted is null without withCited
    if (again.decision === 'allow')
      return { result: grantedResult(again, askedOf(a), request, a.id), decisionId: kept.decisionId };
  }
  // Allowed now without it, the call needs no grant (and was counted, the grant spent, the first
  // time). Asking for it, the retry never outlives the grant: only within the time it could have
  // been redeemed in.
  if (
    fresh.decision !== 'allow' &&
    !(approvalCovers(a, fresh, request) && (await approvals.store.stillAhead(a.expires_at, tx)))
  )
    return null;
  // Asked for exactly what the files ask now: the answer as first given. Otherwise the call's limits
  // asked too, and the approval holds what they asked (their standing as it was filed).
  if (fresh.decision === 'require_approval' && fresh.approval?.hash === a.hash) {
    return { result: grantedResult(fresh, fresh.approval, request, a.id), decisionId: kept.decisionId };
  }
  const rule = fresh.decision === 'require_approval' ? fresh.rule : (a.requirements[0]?.rule ?? fresh.rule);
  return { result: grantedResult({ ...fresh, rule }, askedOf(a), request, a.id), decisionId: kept.decisionId };
}

/**
 * The approval a POST /approvals retry is answered with, as it stands now, or null when the decision
 * made now does not ask for it (approvalCovers).
 */
export async function replayedFiling(
  approvals: ApprovalService,
  tx: TransactionSql,
  kept: KeptAnswer,
  fresh: DecisionResult,
  request: DecideRequest,
  identity: Identity,
): Promise<Approval | null> {
  if (kept.kind !== 'filed') return null;
  const a = await ownApproval(approvals, tx, kept.approvalId, identity);
  return a !== null && approvalCovers(a, fresh, request) ? a : null;
}

/** `$approval` of a consumed approval `a` as it was granted, when `a` was filed for exactly this call. */
function grantedView(a: Approval, request: DecideRequest): CitedApprovalView | null {
  if (a.decided_by === null || a.decided_at === null) return null;
  const hash = approvalHash({
    tool: request.tool,
    args: request.args,
    context: request.context,
    requirements: a.requirements,
  });
  return hash === a.hash
    ? { kind: a.kind, status: 'granted', decided_by: a.decided_by, decided_at: a.decided_at, hash }
    : null;
}

async function ownApproval(
  approvals: ApprovalService,
  tx: TransactionSql,
  id: string,
  identity: Identity,
): Promise<Approval | null> {
  const a = await approvals.store.get(id, tx);
  return a !== null && a.requester.sub === identity.user ? a : null;
}
