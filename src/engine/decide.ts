// The stateful decision of /decide (docs/spec.md sections 1, 2.9 and 5.3): decide() over the current
// policy set, the shadow set beside it, then, only when the call asks for state, the database: the
// call counted in its limits, a cited grant redeemed, an Idempotency-Key's act kept. One record per
// answer (./record.ts). A call that asks for no state never awaits: the hot path.
import { randomUUID } from 'node:crypto';
import type { TransactionSql } from 'postgres';
import type { KeptAnswer, StoredAnswer } from '../db/idempotency.js';
import { decide } from '../policy/decide.js';
import type { CitedApprovalView, DecideRequest, DecisionResult, Identity } from '../policy/model.js';
import { decided, decisionText, nextOf, written, type Answer } from './answer.js';
import {
  approvalsOf,
  answerInTransaction,
  isCounted,
  keysOf,
  limitsOf,
  RolledBack,
  settleDecision,
  settleOnLanes,
  countedLimits,
  type Settled,
} from './limits.js';
import { decisionLine, kindOf, recorderOf, writeRecord, type Asked, type Recorder } from './record.js';
import type { DecisionLine } from '../policy/record.js';
import { keptOfDecision, replayedDecision } from './replays.js';
import { decideInShadow } from './shadow.js';
import type { ApprovalService, Redemption } from '../approvals/service.js';
import { StoreUnavailableError } from '../db/errors.js';
import type { Call, EngineParts } from './parts.js';

export interface DecideCall extends Call {
  /** The approval to redeem (`approval_id`). */
  readonly approvalId?: string | undefined;
}

export function decideCall(parts: EngineParts, call: DecideCall): Answer | Promise<Answer> {
  return call.approvalId === undefined || parts.approvals === null
    ? decideNow(parts, call, undefined)
    : citing(parts, call, parts.approvals, call.approvalId);
}

/**
 * A call citing `approval_id`: the approval is read first, and the call decided with it as
 * `$approval` when it stands for this very call (docs/spec.md section 3.2), and also without it:
 * what the call gets should the approval change before it is consumed.
 */
async function citing(parts: EngineParts, call: DecideCall, approvals: ApprovalService, id: string): Promise<Answer> {
  // A database that cannot answer leaves `$approval` missing (a condition reading it fails closed):
  // a call decided without it that needs no database (allowed, denied, aborted, uncounted) is
  // answered as without approval_id; any other is this 503 now, not after a second deadline.
  let cited: CitedApprovalView | null;
  try {
    cited = await approvals.cited(id, call.request, call.identity);
  } catch (err) {
    if (!(err instanceof StoreUnavailableError)) throw err;
    const fresh = decide(parts.policies.current(), call.request, call.identity);
    if (fresh.decision === 'require_approval' || isCounted(fresh)) throw err;
    cited = null;
  }
  if (cited === null) return decideNow(parts, call, undefined);
  const absent = decide(parts.policies.current(), call.request, call.identity);
  return decideNow(parts, { ...call, request: { ...call.request, cited } }, absent);
}

function decideNow(parts: EngineParts, call: DecideCall, absent: DecisionResult | undefined): Answer | Promise<Answer> {
  const { request: req, identity, approvalId } = call;
  const decisionId = randomUUID();
  const started = process.hrtime.bigint();
  const set = parts.policies.current();
  // Every request is decided for its own caller first, an Idempotency-Key's retry included: what a
  // key kept answers it only when this decision still stands behind it (./replays.ts).
  const fresh = decide(set, req, identity);
  const durationUs = Number(process.hrtime.bigint() - started) / 1000;
  if (parts.shadow !== null) decideInShadow(parts.shadow, parts.metrics, call.log, decisionId, req, identity, fresh);
  const asked: Asked = { decisionId, request: req, set, identity, durationUs, approvalId };
  if (!isCounted(fresh) && (approvalId === undefined || fresh.internalError)) {
    // The hot path: no database, nothing awaited; the record queued.
    const line = decisionLine(asked, fresh.decision, fresh.rule, parts.logArgs, kindOf(fresh));
    writeRecord(call.log, parts.metrics, parts.records?.writer ?? null, line, durationUs);
    return decided(fresh, decisionId, nextOf(fresh, null));
  }
  const recorder = recorderOf(parts, call.log, asked);
  return isCounted(fresh)
    ? counted(parts, call, fresh, decisionId, recorder, absent)
    : redeemed(parts, call, fresh, decisionId, recorder, absent);
}

/**
 * Budgets and rate limits select the call: it is counted in the database before it is answered. Its
 * record goes with the transaction that counts it (Recorder).
 */
async function counted(
  parts: EngineParts,
  call: DecideCall,
  fresh: DecisionResult & { charges: NonNullable<DecisionResult['charges']> },
  decisionId: string,
  recorder: Recorder,
  absent: DecisionResult | undefined,
): Promise<Answer> {
  const { request: req, identity, approvalId } = call;
  const keyed = keyedReplay(parts, fresh, req, identity);
  const limits = limitsOf(parts.limits);
  const claim = call.claim();
  let settled: Settled | undefined;
  // The record of an allowed call (the record says the same of each limit whatever it left: the
  // counters are the log line's alone).
  const allowed = recorder.line(fresh.decision, fresh.rule);
  // Nothing but counting to do in the transaction: on the lanes, the record sent with their COMMIT.
  const one =
    claim === undefined && approvalId === undefined
      ? settleOnLanes(limits, fresh, req, recorder.statement(allowed))
      : undefined;
  if (one !== undefined) settled = await one;
  const answer =
    settled !== undefined
      ? { ...decisionText(settled.result, decisionId, nextOf(settled.result, null)), replayed: false }
      : await answerInTransaction(
          parts.keys,
          limits,
          claim,
          async (tx) => {
            const s = await settleDecision(tx, limits, parts.approvals, fresh, req, identity, approvalId, absent);
            settled = s;
            const given = decisionText(s.result, decisionId, nextOf(s.result, s.cited));
            if (s.rollback) throw new RolledBack(given);
            await recorder.insert(tx, settledLine(allowed, s));
            return { answer: given, kept: keptOfDecision(s.result, decisionId, s.counted) };
          },
          keyed.replay,
        );
  if (answer.replayed && keyed.replayed !== undefined) {
    const r = keyed.replayed;
    recorder.write(replayedLine(recorder, r));
  } else {
    recorder.write(settled === undefined ? allowed : settledLine(allowed, settled));
  }
  return written(answer);
}

/** The record of a counted call as settled: its final answer, and each limit (countedLimits). */
function settledLine(allowed: DecisionLine, settled: Settled): DecisionLine {
  const { decision, rule } = settled.result;
  return { ...allowed, decision, rule, budgets: countedLimits(settled) };
}

/** A cited approval (`approval_id`) on a call no limit selects. */
async function redeemed(
  parts: EngineParts,
  call: DecideCall,
  fresh: DecisionResult,
  decisionId: string,
  recorder: Recorder,
  absent: DecisionResult | undefined,
): Promise<Answer> {
  const { request: req, identity } = call;
  const claim = call.claim();
  const approvals = approvalsOf(parts.approvals);
  const approvalId = call.approvalId as string; // not the hot path: cited
  // Only a require_approval, or an allow that read `$approval`, can consume a grant: any other answer
  // changes nothing, and needs no key.
  const consumes = fresh.decision === 'require_approval' || (fresh.decision === 'allow' && req.cited !== undefined);
  // The redeem, and its record, in one transaction.
  const redeem = async (tx: TransactionSql): Promise<{ r: Redemption; line: DecisionLine }> => {
    const r = await approvals.redeem(fresh, req, approvalId, identity, tx, absent);
    const line = recorder.line(r.result.decision, r.result.rule);
    await recorder.insert(tx, line);
    return { r, line };
  };
  if (claim !== undefined && consumes) {
    // The redeem and what the key keeps of it in one transaction: a retry is answered from it.
    const keyed = keyedReplay(parts, fresh, req, identity);
    let done: { r: Redemption; line: DecisionLine } | undefined;
    const answer = await keysOf(parts.keys).once(
      claim,
      async (tx) => {
        done = await redeem(tx);
        const { result, cited } = done.r;
        return {
          answer: decisionText(result, decisionId, nextOf(result, cited)),
          kept: keptOfDecision(result, decisionId, false),
        };
      },
      keyed.replay,
    );
    const r = answer.replayed ? keyed.replayed : undefined;
    if (r !== undefined) recorder.write(replayedLine(recorder, r));
    else recorder.write(done?.line ?? recorder.line(fresh.decision, fresh.rule));
    return written(answer);
  }
  if (consumes && parts.records !== null) {
    const { r, line } = await approvals.store.transaction(redeem);
    recorder.write(line);
    return decided(r.result, decisionId, nextOf(r.result, r.cited));
  }
  // The store off (the approvals' own transaction), or nothing to consume (no database).
  const r = await approvals.redeem(fresh, req, approvalId, identity, undefined, absent);
  recorder.write(recorder.line(r.result.decision, r.result.rule));
  return decided(r.result, decisionId, nextOf(r.result, r.cited));
}

/**
 * How a keyed /decide retry is answered from what its key kept: the allow rebuilt under the decision
 * id first given, when the decision made now stands behind it; `replayed` says which, for the record.
 */
function keyedReplay(
  parts: EngineParts,
  fresh: DecisionResult,
  req: DecideRequest,
  identity: Identity,
): {
  replay: (tx: TransactionSql, kept: KeptAnswer) => Promise<StoredAnswer | null>;
  readonly replayed: Replayed | undefined;
} {
  let replayed: Replayed | undefined;
  return {
    async replay(tx, kept) {
      const set = parts.policies.current();
      const withCited = (cited: CitedApprovalView): DecisionResult => decide(set, { ...req, cited }, identity);
      replayed = (await replayedDecision(parts.approvals, tx, kept, fresh, req, identity, withCited)) ?? undefined;
      return replayed === undefined
        ? null
        : decisionText(replayed.result, replayed.decisionId, nextOf(replayed.result, null));
    },
    get replayed() {
      return replayed;
    },
  };
}

type Replayed = { result: DecisionResult; decisionId: string };

/** The record of a keyed retry answered from what its key kept: the decision first given, named. */
const replayedLine = (recorder: Recorder, r: Replayed): DecisionLine =>
  recorder.line(r.result.decision, r.result.rule, { replayed: true, replayed_decision_id: r.decisionId });
