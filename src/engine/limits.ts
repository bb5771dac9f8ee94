// The stateful step of a decision that budgets or rate limits (together: limits) select (docs/spec.md section 2.9): decide()
// gave the policy's answer and the charges; here, in one transaction, the call is counted (or its
// counters read), the charges it would cross settle the answer (src/policy/limits.ts), and a cited
// grant is redeemed. What holds:
// - A call counts exactly when its final answer is allow: every counter it fits in, in one
//   transaction; a call refused by one counter counts in none (the transaction is rolled back).
// - A redeemed grant counts its call, past the limits it was granted over.
// - Only the counting routes count: /decide, and POST /approvals when it finds the call allowed (its
//   409 says allow, and a client runs the call on it). /explain and filing an approval only read.
import type { TransactionSql } from 'postgres';
import type { CitedApproval, ApprovalService } from '../approvals/service.js';
import type { Acted, IdempotencyClaim, KeptAnswer, Keys, StoredAnswer } from '../db/idempotency.js';
import type { AfterCounting, LimitService } from '../budgets/service.js';
import type { ChargeOutcome } from '../budgets/store.js';
import { settleCharges, type Standing } from '../policy/limits.js';
import type { Charge, DecideRequest, DecisionResult, Identity } from '../policy/model.js';
import { NotConfiguredError } from './errors.js';
import type { DecisionLine } from '../policy/record.js';

/** Whether a decision needs the stateful step: budgets or rate limits select a call that may be allowed. */
export function isCounted(
  result: DecisionResult,
): result is DecisionResult & { charges: NonNullable<DecisionResult['charges']> } {
  return result.charges !== undefined && (result.decision === 'allow' || result.decision === 'require_approval');
}

/** The final answer of a counted decision, and what it read. */
export interface Settled {
  readonly result: DecisionResult;
  /** The cited approval, when the caller cited one of its own (`next` follows from it). */
  readonly cited: CitedApproval | null;
  readonly outcome: ChargeOutcome;
  /** Whether the call was counted: its answer is allow. */
  readonly counted: boolean;
}

/** The limit service, or NotConfiguredError: without a database no counted call is answered (fail closed). */
export function limitsOf(limits: LimitService | null): LimitService {
  if (limits === null)
    throw new NotConfiguredError('budgets and rate limits need the database, which is not configured');
  limits.ensureReady();
  return limits;
}

/** The approvals, or NotConfiguredError. */
export function approvalsOf(approvals: ApprovalService | null): ApprovalService {
  if (approvals === null) throw new NotConfiguredError('approvals are not configured');
  return approvals;
}

/** The Idempotency-Keys, or NotConfiguredError. */
export function keysOf(keys: Keys | null): Keys {
  if (keys === null) throw new NotConfiguredError('approvals are not configured');
  return keys;
}

/**
 * /decide: count the call (when it may be allowed now, or a grant is cited), settle, redeem. When the
 * final answer is not allow, whatever was counted must not commit: the caller rolls back (RolledBack).
 */
export async function settleDecision(
  tx: TransactionSql,
  limits: LimitService,
  approvals: ApprovalService | null,
  fresh: DecisionResult & { charges: NonNullable<DecisionResult['charges']> },
  request: DecideRequest,
  identity: Identity,
  approvalId: string | undefined,
  absent?: DecisionResult,
): Promise<Settled & { rollback: boolean }> {
  const counting = fresh.decision === 'allow' || approvalId !== undefined;
  const outcome = counting ? await limits.store.charge(tx, fresh.charges) : await limits.store.check(tx, fresh.charges);
  let result = settleCharges(fresh, request, outcome.refusals);
  let cited: CitedApproval | null = null;
  // An allow that read `$approval` consumes the cited approval (ApprovalService.redeem).
  const consumes =
    result.decision === 'require_approval' || (result.decision === 'allow' && request.cited !== undefined);
  if (approvalId !== undefined && consumes) {
    const redeemed = await approvalsOf(approvals).redeem(result, request, approvalId, identity, tx, absent);
    cited = redeemed.cited;
    result = redeemed.result;
    // The operator saw these limits crossed and granted the call: it counts past them.
    if (result.decision === 'allow')
      await limits.store.force(
        tx,
        outcome.refusals.map((r) => r.charge),
      );
  }
  const counted = result.decision === 'allow';
  return { result, cited, outcome, counted, rollback: counting && !counted };
}

/**
 * The hot path of /decide: a call the policy allows, no grant cited, no Idempotency-Key, every
 * counter changed by one statement: counted on the lanes (LimitService.countOne, countAll), one round
 * trip or more fewer than a transaction of the pool. Undefined when the call is not such a call.
 * Refused, it counted nothing; the counters it would cross are read for the answer. `after` commits
 * with the count, only when the call counted (its record).
 */
export function settleOnLanes(
  limits: LimitService,
  fresh: DecisionResult & { charges: NonNullable<DecisionResult['charges']> },
  request: DecideRequest,
  after?: AfterCounting,
): Promise<Settled> | undefined {
  if (fresh.decision !== 'allow') return undefined;
  const refusedOnes = async (refused: readonly Charge[]): Promise<Settled> => {
    // Counted in none of them; read where the crossed ones stand, for the answer.
    const standings = new Map<Charge, Standing>();
    await limits.transaction(async (tx) => {
      for (const charge of refused) standings.set(charge, await limits.store.read(tx, charge.limit, charge.key!)); // counted by a statement: a key
    });
    const outcome = { refusals: refused.map((charge) => ({ charge, standing: standings.get(charge)! })), standings };
    return { result: settleCharges(fresh, request, outcome.refusals), cited: null, outcome, counted: false };
  };
  const [charge] = fresh.charges;
  if (fresh.charges.length === 1 && charge !== undefined) {
    const counting = limits.countOne(charge, after);
    return counting?.then((after) =>
      after !== null
        ? {
            result: fresh,
            cited: null,
            outcome: { refusals: [], standings: new Map([[charge, after]]) },
            counted: true,
          }
        : refusedOnes([charge]),
    );
  }
  return limits
    .countAll(fresh.charges, after)
    ?.then((outcome) =>
      'refused' in outcome
        ? refusedOnes(outcome.refused)
        : { result: fresh, cited: null, outcome: { refusals: [], standings: outcome.counted }, counted: true },
    );
}

/**
 * POST /approvals: a call the policy allows is counted as /decide would (all or nothing, inside a
 * savepoint when several counters are involved, since the approval may still be filed after), so a
 * 409 allow is an allow that counted; a call that asks is only checked.
 */
export async function settleFiling(
  tx: TransactionSql,
  limits: LimitService,
  fresh: DecisionResult & { charges: NonNullable<DecisionResult['charges']> },
  request: DecideRequest,
): Promise<Settled> {
  if (fresh.decision !== 'allow') {
    const outcome = await limits.store.check(tx, fresh.charges);
    return { result: settleCharges(fresh, request, outcome.refusals), cited: null, outcome, counted: false };
  }
  let outcome: ChargeOutcome;
  if (fresh.charges.length === 1) {
    // A refused counter changed nothing: no savepoint needed.
    outcome = await limits.store.charge(tx, fresh.charges);
  } else {
    try {
      outcome = await tx.savepoint(async (sp) => {
        const o = await limits.store.charge(sp, fresh.charges);
        if (o.refusals.length > 0) throw new Refused(o);
        return o;
      });
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      outcome = err.outcome; // rolled back to the savepoint: counted in none
    }
  }
  const result = settleCharges(fresh, request, outcome.refusals);
  return { result, cited: null, outcome, counted: result.decision === 'allow' };
}

/** /explain: the counters read, never counted. */
export async function settleExplained(
  tx: TransactionSql,
  limits: LimitService,
  fresh: DecisionResult & { charges: NonNullable<DecisionResult['charges']> },
  request: DecideRequest,
): Promise<Settled> {
  const outcome = await limits.store.check(tx, fresh.charges);
  return { result: settleCharges(fresh, request, outcome.refusals), cited: null, outcome, counted: false };
}

/** Thrown out of a transaction to roll it back with the answer it gave (nothing of it is kept). */
export class RolledBack extends Error {
  constructor(readonly answer: StoredAnswer) {
    super('rolled back');
    this.name = 'RolledBack';
  }
}

class Refused extends Error {
  constructor(readonly outcome: ChargeOutcome) {
    super('refused');
  }
}

/**
 * `act` in one transaction under DB_DEADLINE_MS: with an Idempotency-Key, the key's (a retry that
 * `replay` answers from what the key kept counts nothing again); an answer thrown as RolledBack is
 * sent, not kept.
 */
export async function answerInTransaction(
  keys: Keys | null,
  limits: LimitService,
  claim: IdempotencyClaim | undefined,
  act: (tx: TransactionSql) => Promise<Acted>,
  replay: (tx: TransactionSql, kept: KeptAnswer) => Promise<StoredAnswer | null>,
): Promise<StoredAnswer & { replayed: boolean }> {
  try {
    if (claim !== undefined) {
      return await keysOf(keys).once(claim, act, replay);
    }
    return { ...(await limits.transaction(act)).answer, replayed: false };
  } catch (err) {
    if (err instanceof RolledBack) return { ...err.answer, replayed: false };
    throw err;
  }
}

/**
 * What the record says of a counted call: each limit, whether the call counted in it (an allowed
 * call counts in all of them but `max_usd` budgets, which count reported spend, and those it cannot
 * be counted in), and its counter as read or left (null: undecidable).
 */
export function countedLimits(settled: Settled): NonNullable<DecisionLine['budgets']> {
  const charges = [
    ...settled.outcome.standings.keys(),
    ...settled.outcome.refusals.filter((r) => r.standing === null).map((r) => r.charge),
  ];
  return charges.map((charge) => ({
    id: charge.limit.id,
    counted:
      settled.counted &&
      charge.key !== null &&
      charge.amount !== null &&
      !(charge.limit.type === 'budget' && 'usd' in charge.limit.measure),
    standing: settled.outcome.standings.get(charge)?.counted.text ?? null,
  }));
}
