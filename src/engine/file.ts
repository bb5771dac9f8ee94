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
import { inspect, type ResultInspection } from '../policy/inspect.js';
import { interruptedResult } from '../policy/interrupted.js';
import type { DecisionResult } from '../policy/model.js';
import { approvalView, decided, decisionBody, inspected, written, type Answer } from './answer.js';
import {
  answerInTransaction,
  approvalsOf,
  countedLimits,
  isCounted,
  keysOf,
  limitsOf,
  settleFiling,
} from './limits.js';
import { kindOf, recorderOf, type Beside } from './record.js';
import type { DecisionLine } from '../policy/record.js';
import type { Call, EngineParts } from './parts.js';
import { replayedFiling } from './replays.js';
import type { ApprovalService } from '../approvals/service.js';
import type { ApprovalStore, CreateApprovalInput } from '../approvals/store.js';

export interface FileCall extends Call {
  /** Whether the caller may read operators' notes (an approver). */
  readonly seesNotes: boolean;
  /**
   * A runtime's own approval for a call interrupted by a crash (`kind: interrupted_side_effect`, the
   * route has checked RUNTIME_ROLE): filed as asked, not decided; the policy decides on resume.
   */
  readonly interrupted?: boolean;
  /**
   * A tool's result held for review (a POST /inspect body, `stage: result`): inspected again here,
   * and filed only when the inspection asks for a review. `request` is then its call.
   */
  readonly inspection?: ResultInspection;
}

export async function fileCall(parts: EngineParts, call: FileCall): Promise<Answer> {
  const approvals = approvalsOf(parts.approvals);
  approvals.ensureReady();
  if (call.inspection !== undefined) return fileReview(parts, approvals, call, call.inspection);
  const { store } = approvals;
  const { request: req, identity } = call;
  const set = parts.policies.current();
  const started = process.hrtime.bigint();
  const fresh = call.interrupted === true ? interruptedResult(req, set.identities) : decide(set, req, identity);
  const durationUs = Number(process.hrtime.bigint() - started) / 1000;
  const decisionId = randomUUID();
  // A filing is recorded as the decision it made (not in the decision metrics, which count /decide's);
  // a runtime's interrupted-call filing decides nothing, and its approval's events are its record.
  const recorder = recorderOf(
    parts,
    call.log,
    { decisionId, request: req, set, identity, durationUs, approvalId: undefined },
    call.interrupted === true ? 'unrecorded' : 'filing',
  );
  const lineOf = (result: DecisionResult, beside?: Beside): DecisionLine =>
    recorder.line(result.decision, result.rule, { ...kindOf(result), ...beside });
  if (fresh.internalError) {
    recorder.write(lineOf(fresh));
    return decided(fresh, decisionId);
  }
  const claim = call.claim();
  // The record of what the transaction answered, inserted in it last (Recorder), and logged after it.
  let recorded: DecisionLine | undefined;
  const record = async (tx: TransactionSql, result: DecisionResult, beside?: Beside): Promise<void> => {
    recorded = lineOf(result, beside);
    await recorder.insert(tx, recorded);
  };
  const answered = (answer: StoredAnswer & { replayed: boolean }): Answer => {
    recorder.write(answer.replayed ? lineOf(fresh, { replayed: true }) : (recorded ?? lineOf(fresh)));
    return written(answer);
  };
  // Filing (or the 409 with the decision), as the text sent, and what a key keeps of it: the approval
  // filed or found, or a counted allow; a 409 that counted nothing changed nothing.
  const file = async (result: DecisionResult, counted: boolean, tx?: TransactionSql): Promise<Acted> => {
    const descriptor = result.decision === 'require_approval' ? result.approval : undefined;
    if (descriptor === undefined) {
      const answer = { status: 409, body: JSON.stringify(decisionBody(result, decisionId)) };
      return { answer, kept: counted ? { kind: 'allow', status: 409, decisionId } : null };
    }
    return created(store, call, { descriptor, ...req, runId: req.run?.id, policies: result.policies }, result.rule, tx);
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
        const acted = await file(settled.result, settled.counted, tx);
        await record(tx, settled.result, { budgets: countedLimits(settled) });
        return acted;
      },
      replay,
    );
    return answered(answer);
  }
  const filed = async (tx: TransactionSql): Promise<Acted> => {
    const acted = await file(fresh, false, tx);
    await record(tx, fresh);
    return acted;
  };
  // Only a require_approval files anything: any other answer changes nothing, and needs no key.
  if (fresh.decision !== 'require_approval') return answered({ ...(await file(fresh, false)).answer, replayed: false });
  if (claim !== undefined) return answered(await keysOf(parts.keys).once(claim, filed, replay));
  // With the decision store on, the filing and its record in one transaction; else the store's own.
  const acted =
    call.interrupted !== true && parts.records !== null
      ? await approvals.store.transaction(filed)
      : await file(fresh, false);
  return answered({ ...acted.answer, replayed: false });
}

/**
 * Filing the review of a tool's result: the result is inspected again, never taken as asked; a
 * require_approval files (or finds) the approval it describes, with the result stored beside the
 * call; any other answer is a 409 with the inspection. A retry with the same Idempotency-Key gets
 * the approval it filed while the inspection made now still asks for exactly it.
 */
async function fileReview(
  parts: EngineParts,
  approvals: ApprovalService,
  call: FileCall,
  req: ResultInspection,
): Promise<Answer> {
  const { identity } = call;
  const set = parts.policies.current();
  const started = process.hrtime.bigint();
  const result = inspect(set, req, identity);
  const durationUs = Number(process.hrtime.bigint() - started) / 1000;
  const decisionId = randomUUID();
  // Recorded as the inspection it made, as a call's filing is (in the filing's transaction).
  const recorder = recorderOf(
    parts,
    call.log,
    { decisionId, request: req, set, identity, durationUs, approvalId: undefined },
    'filing',
  );
  const line = recorder.line(result.decision, result.rule, result.approval && { kind: result.approval.kind });
  if (result.internalError) {
    recorder.write(line);
    return inspected(result, decisionId);
  }
  const descriptor = result.decision === 'require_approval' ? result.approval : undefined;
  if (descriptor === undefined) {
    // Needs no review: the inspection as a decision, as a call that needs no approval is answered
    // (never the value, redacted or not: POST /inspect answers that).
    const { decision, reason, rule, policies, message } = result;
    const body = { decision, reason, rule, policies, message, decision_id: decisionId };
    recorder.write(line);
    return written({ status: 409, body: JSON.stringify(body), replayed: false });
  }
  const file = (tx?: TransactionSql): Promise<Acted> =>
    created(
      approvals.store,
      call,
      { descriptor, ...req, runId: req.run?.id, policies: result.policies },
      result.rule,
      tx,
    );
  const replay = async (tx: TransactionSql, kept: KeptAnswer): Promise<StoredAnswer | null> => {
    if (kept.kind !== 'filed') return null;
    const a = await approvals.store.get(kept.approvalId, tx);
    return a !== null && a.requester.sub === identity.user && a.hash === descriptor.hash
      ? { status: kept.status, body: canonicalize(approvalView(a, call.seesNotes)) }
      : null;
  };
  const filed = async (tx: TransactionSql): Promise<Acted> => {
    const acted = await file(tx);
    await recorder.insert(tx, line);
    return acted;
  };
  const claim = call.claim();
  const answer =
    claim !== undefined
      ? await keysOf(parts.keys).once(claim, filed, replay)
      : {
          ...(parts.records !== null ? await approvals.store.transaction(filed) : await file()).answer,
          replayed: false,
        };
  recorder.write(answer.replayed ? { ...line, replayed: true } : line);
  return written(answer);
}

/** The approval a filing describes (a result's review: with its stage and the result), and who files it. */
type Filed = Omit<CreateApprovalInput, 'requester'> & { readonly stage?: 'result' };

/**
 * Files (or finds) the approval, logs it, and answers it (201 filed, 200 found), with what an
 * Idempotency-Key keeps of it.
 */
async function created(
  store: ApprovalStore,
  call: FileCall,
  filed: Filed,
  rule: string,
  tx?: TransactionSql,
): Promise<Acted> {
  const { identity } = call;
  const { descriptor, tool, args, context, runId, result, stage, policies } = filed;
  const { approval, created } = await store.create(
    {
      descriptor,
      tool,
      args,
      context,
      runId,
      result,
      requester: { sub: identity.user, team: identity.team, agent: identity.agent, name: identity.name ?? null },
      policies,
    },
    tx,
  );
  call.log.info(
    {
      approval_id: approval.id,
      created,
      tool,
      ...(stage !== undefined ? { stage } : {}),
      rule,
      user: identity.user,
      ...(runId !== undefined ? { run_id: runId } : {}),
    },
    'approval requested',
  );
  const status = created ? 201 : 200;
  return {
    answer: { status, body: canonicalize(approvalView(approval, call.seesNotes)) },
    kept: { kind: 'filed', status, approvalId: approval.id },
  };
}
