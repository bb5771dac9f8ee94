// Filing an approval (POST /approvals, docs/spec.md section 5.4): the call is decided again here,
// never taken from the caller; a require_approval files (or finds) the approval its decision
// describes, any other answer is a 409 with the decision. A call that budgets or rate limits select
// asks their counters first (a call found allowed is counted: its 409 says allow). A runtime's
// approval for a call interrupted by a crash is filed without a decision (../policy/interrupted.ts).
import { randomUUID } from 'node:crypto';
import type { TransactionSql } from 'postgres';
import type { Acted, KeptAnswer, StoredAnswer } from '../db/idempotency.js';
import { canonicalize } from '../json/canonical.js';
import { decide } from '../policy/decide.js';
import { interruptedResult } from '../policy/interrupted.js';
import type { DecisionResult } from '../policy/model.js';
import { approvalView, decided, decisionBody, written, type Answer } from './answer.js';
import { answerInTransaction, approvalsOf, isCounted, keysOf, limitsOf, settleFiling } from './limits.js';
import type { Call, EngineParts } from './parts.js';
import { replayedFiling } from './replays.js';

export interface FileCall extends Call {
  /** Whether the caller may read operators' notes (an approver). */
  readonly seesNotes: boolean;
  /**
   * A runtime's own approval for a call interrupted by a crash (`kind: interrupted_side_effect`, the
   * route has checked RUNTIME_ROLE): filed as asked, not decided; the policy decides on resume.
   */
  readonly interrupted?: boolean;
}

export async function fileCall(parts: EngineParts, call: FileCall): Promise<Answer> {
  const approvals = approvalsOf(parts.approvals);
  approvals.ensureReady();
  const { store } = approvals;
  const { request: req, identity } = call;
  const set = parts.policies.current();
  const fresh = call.interrupted === true ? interruptedResult(req, set.identities) : decide(set, req, identity);
  const decisionId = randomUUID();
  if (fresh.internalError) return decided(fresh, decisionId);
  const claim = call.claim();
  // Filing (or the 409 with the decision), as the text sent, and what a key keeps of it: the approval
  // filed or found, or a counted allow; a 409 that counted nothing changed nothing.
  const file = async (result: DecisionResult, counted: boolean, tx?: TransactionSql): Promise<Acted> => {
    const descriptor = result.decision === 'require_approval' ? result.approval : undefined;
    if (descriptor === undefined) {
      const answer = { status: 409, body: JSON.stringify(decisionBody(result, decisionId)) };
      return { answer, kept: counted ? { kind: 'allow', status: 409, decisionId } : null };
    }
    const { approval, created } = await store.create(
      {
        descriptor,
        tool: req.tool,
        args: req.args,
        context: req.context,
        runId: req.run?.id,
        requester: { sub: identity.user, team: identity.team, agent: identity.agent, name: identity.name ?? null },
        policies: result.policies,
      },
      tx,
    );
    const run = req.run?.id !== undefined ? { run_id: req.run.id } : {};
    call.log.info(
      { approval_id: approval.id, created, tool: req.tool, rule: result.rule, user: identity.user, ...run },
      'approval requested',
    );
    const status = created ? 201 : 200;
    return {
      answer: { status, body: canonicalize(approvalView(approval, call.seesNotes)) },
      kept: { kind: 'filed', status, approvalId: approval.id },
    };
  };
  // A retry is decided again first (`fresh`, for its own identity); what its key kept answers it
  // only when that decision stands behind it (./replays.ts): the approval as it stands now, or the
  // counted allow's 409 under its first decision id.
  const replay = async (tx: TransactionSql, kept: KeptAnswer): Promise<StoredAnswer | null> => {
    if (kept.kind === 'allow')
      return fresh.decision === 'allow'
        ? { status: kept.status, body: JSON.stringify(decisionBody(fresh, kept.decisionId)) }
        : null;
    const approval = await replayedFiling(approvals, tx, kept, fresh, req, identity);
    return approval === null
      ? null
      : { status: kept.status, body: canonicalize(approvalView(approval, call.seesNotes)) };
  };
  // Budgets and rate limits select the call: their counters say whether it needs an approval (and a
  // call found allowed is counted: its 409 says allow).
  if (isCounted(fresh)) {
    const limits = limitsOf(parts.limits);
    const answer = await answerInTransaction(
      parts.keys,
      limits,
      claim,
      async (tx) => {
        const settled = await settleFiling(tx, limits, fresh, req);
        return file(settled.result, settled.counted, tx);
      },
      replay,
    );
    return written(answer);
  }
  // Only a require_approval files anything: any other answer changes nothing, and needs no key.
  const answer =
    claim === undefined || fresh.decision !== 'require_approval'
      ? { ...(await file(fresh, false)).answer, replayed: false }
      : await keysOf(parts.keys).once(claim, (tx) => file(fresh, false, tx), replay);
  return written(answer);
}
