// Approvals as the service uses them: redeem an approval on /decide, check the database, sweep
// expired rows. The store does the SQL; this decides what a stored approval means for a decision.
import type { Sql, TransactionSql } from 'postgres';
import { StoreUnavailableError } from '../db/errors.js';
import { modelMessage, spentApprovalMessage } from '../policy/message.js';
import { approvalHash } from '../json/canonical.js';
import type { JsonObject } from '../json/value.js';
import type {
  ApprovalDescriptor,
  CitedApprovalView,
  DecideRequest,
  DecisionResult,
  Identity,
} from '../policy/model.js';
import type { Approval, ApprovalStatus } from './approval.js';
import { createApprovalFeed, type ApprovalFeed } from './feed.js';
import type { ApprovalWaiter } from './notify.js';
import type { ApprovalStore } from './store.js';

export interface ApprovalService {
  readonly store: ApprovalStore;
  readonly waiter: ApprovalWaiter;
  /** Every change of an approval, live (GET /approvals/stream). */
  readonly feed: ApprovalFeed;
  /** Throws StoreUnavailableError (503) while the database schema is not in place yet. */
  ensureReady(): void;
  /**
   * The cited approval as `$approval` reads it (docs/spec.md section 3.2), read before the call is
   * decided: null unless it is this caller's, granted, unexpired and filed for exactly this call
   * (its hash recomputed over this tool, args and context with its own requirements).
   */
  cited(approvalId: string, request: DecideRequest, identity: Identity): Promise<CitedApprovalView | null>;
  /**
   * docs/spec.md section 5.3, `/decide` with `approval_id`: consume a granted approval of this exact
   * request. In `tx` when given (an Idempotency-Key's transaction: the store's idempotent()). A call
   * decided with `$approval` (`request.cited`) and allowed consumes the cited approval; when it can
   * no longer be consumed (it changed since it was read), the call is answered as `absent` (its
   * decision without `$approval`) would be.
   */
  redeem(
    fresh: DecisionResult,
    request: DecideRequest,
    approvalId: string,
    identity: Identity,
    tx?: TransactionSql,
    absent?: DecisionResult,
  ): Promise<Redemption>;
  /** Whether the database answers now (for /readyz). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** The answer, and the cited approval when it is the caller's: what a client does next follows from both. */
export interface Redemption {
  readonly result: DecisionResult;
  readonly cited: CitedApproval | null;
}

export interface CitedApproval {
  readonly id: string;
  readonly status: ApprovalStatus;
  readonly expiresAt: string;
  /** Whether it was asked for this very request (the same hash, as filed or as amended). */
  readonly sameRequest: boolean;
  /** Set when the call was answered `deny` because an operator amended it: the arguments granted instead. */
  readonly amendedArgs?: JsonObject;
}

export interface ApprovalServiceOptions {
  sweepMs?: number;
  /**
   * Whether the migrations have been applied. A service started while the database was down
   * answers 503 until they are (src/service.ts keeps retrying them); tests start migrated.
   */
  schemaReady?: () => boolean;
}

export function createApprovalService(
  sql: Sql,
  store: ApprovalStore,
  waiter: ApprovalWaiter,
  options: ApprovalServiceOptions = {},
): ApprovalService {
  const schemaReady = options.schemaReady ?? (() => true);
  const ensureReady = (): void => {
    if (!schemaReady()) throw new StoreUnavailableError('connection');
  };
  // Expired approvals read as expired without a sweeper; the sweep makes it durable, with events.
  const sweeper = setInterval(() => {
    if (schemaReady()) store.sweep().catch(() => undefined); // a down database is reported by /readyz, not here
  }, options.sweepMs ?? 60_000);
  sweeper.unref();
  // Streams take their places among the waits' (MAX_WAITS_PER_CALLER, MAX_WAITS).
  const feed = createApprovalFeed(sql, store, waiter.holds);

  return {
    store,
    waiter,
    feed,
    ensureReady,
    async cited(approvalId, request, identity) {
      ensureReady();
      const a = await store.get(approvalId);
      if (a === null || a.requester.sub !== identity.user || a.status !== 'granted') return null;
      if (a.decided_by === null || a.decided_at === null) return null;
      // Once amended, only the amended call stands for it (docs/spec.md section 5.4).
      const hash = approvalHash({
        tool: request.tool,
        args: request.args,
        context: request.context,
        requirements: a.amended_requirements ?? a.requirements,
      });
      if (hash !== (a.amended_hash ?? a.hash)) return null;
      return { kind: a.kind, status: 'granted', decided_by: a.decided_by, decided_at: a.decided_at, hash };
    },
    async redeem(given, request, approvalId, identity, tx, absent) {
      let fresh = given;
      // Allowed with `$approval` read: the cited approval is consumed with the allow, in one statement.
      if (fresh.decision === 'allow' && request.cited !== undefined) {
        ensureReady();
        const consumed = await store.consume(approvalId, { sub: identity.user }, request.cited.hash, tx);
        if (consumed.ok) {
          const a = asRedeemed(consumed.approval);
          return { result: grantedResult(fresh, askedOf(a), request, a.id), cited: citedOf(a, true) };
        }
        // Consumed, cancelled or expired since it was read: `$approval` is absent after all.
        fresh = absent ?? changedResult(fresh, request);
      }
      // The request was decided again from scratch; only a require_approval can be redeemed.
      if (fresh.decision !== 'require_approval' || !fresh.approval) return { result: fresh, cited: null };
      ensureReady();
      // One statement consumes a granted approval of this requester for exactly this hash; when it
      // does not, the same transaction reads where the approval stands instead.
      const result = await store.consume(approvalId, { sub: identity.user }, fresh.approval.hash, tx);
      if (result.ok)
        return {
          result: grantedResult(fresh, fresh.approval, request, result.approval.id),
          cited: citedOf(result.approval, true),
        };
      const asked = fresh.approval;
      const standing = standingOf(result.approval, asked.hash);
      // Someone else's approval, or none: say nothing about it; a new approval is needed.
      if (standing.is === 'unknown') return { result: fresh, cited: null };
      const { approval, cited } = standing;
      const ref = { id: approval.id, status: approval.status };
      const denial = (reason: string): DecisionResult => ({
        ...fresh,
        decision: 'deny',
        reason,
        message: modelMessage('deny', request.tool, reason, false),
        approval: { ...asked, ...ref },
      });
      switch (standing.is) {
        case 'amended':
          // Granted only as amended: the call as filed never runs on it; the client is handed the
          // arguments that do (docs/spec.md section 5.3, `use_amended`).
          return {
            result: denial(
              `an operator amended the call under approval ${approval.id}: only the amended arguments are granted`,
            ),
            cited: { ...cited, amendedArgs: approval.amended_args as JsonObject },
          };
        case 'denied':
          return { result: denial(deniedReason(approval)), cited };
        case 'other':
          return { result: fresh, cited };
        case 'spent':
          return {
            result: {
              ...fresh,
              approval: { ...asked, ...ref },
              message: spentApprovalMessage(request.tool, fresh.reason, standing.status),
            },
            cited,
          };
        case 'waiting':
          return { result: { ...fresh, approval: { ...asked, ...ref } }, cited };
      }
    },
    async ping() {
      if (!schemaReady()) return false;
      try {
        await Promise.race([
          sql`select 1`,
          new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 1000).unref()),
        ]);
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      clearInterval(sweeper);
      await Promise.all([waiter.close(), feed.close()]);
    },
  };
}

/** The allow of a call whose approval `approvalId`, asked for by `asked`, was granted and is consumed. */
export function grantedResult(
  result: DecisionResult,
  asked: ApprovalDescriptor,
  request: DecideRequest,
  approvalId: string,
): DecisionResult {
  const reason = `approval ${approvalId} was granted by an operator`;
  return {
    ...result,
    decision: 'allow',
    reason,
    message: modelMessage('allow', request.tool, reason, false),
    approval: { ...asked, id: approvalId, status: 'consumed' },
  };
}

/**
 * Approval `a` as its redeem sees it: once amended (docs/spec.md section 5.4), the amended call, its
 * hash and the requirements that apply to it; otherwise `a` itself.
 */
export function asRedeemed(a: Approval): Approval {
  if (a.amended_args === null || a.amended_hash === null) return a;
  const first = a.amended_requirements?.[0];
  return {
    ...a,
    args: a.amended_args,
    hash: a.amended_hash,
    requirements: a.amended_requirements ?? a.requirements,
    ...(first !== undefined
      ? { kind: first.kind, capability: first.capability, presentation: first.presentation }
      : {}),
  };
}

/** What approval `a` asked the operator for, as a decision carries it. */
export function askedOf(a: Approval): ApprovalDescriptor {
  return {
    kind: a.kind,
    capability: a.capability,
    presentation: a.presentation,
    requirements: a.requirements,
    hash: a.hash,
  };
}

/**
 * Whether approval `a`, filed or consumed for this very request, still answers it as the policy
 * decides it now (`fresh`, before any counter is read): the policy does not deny or abort it, and
 * `a` holds the requirements the files ask for now, followed only by requirements of the budgets
 * and rate limits that select the call now (what their counters asked when it was filed). A call
 * the files allow asks nothing of the files'.
 */
export function approvalCovers(a: Approval, fresh: DecisionResult, request: DecideRequest): boolean {
  if (fresh.decision !== 'allow' && fresh.decision !== 'require_approval') return false;
  const own = fresh.decision === 'require_approval' ? fresh.approval : undefined;
  if (fresh.decision === 'require_approval' && own === undefined) return false;
  const n = own?.requirements.length ?? 0;
  if (a.requirements.length < n) return false;
  if (own !== undefined) {
    const prefix =
      a.requirements.length === n
        ? a.hash
        : approvalHash({
            tool: request.tool,
            args: request.args,
            context: request.context,
            requirements: a.requirements.slice(0, n),
          });
    if (prefix !== own.hash) return false;
  }
  // Limit ids are unique among rule ids too (docs/spec.md section 2.9): a rule cannot pass for a limit.
  const limits = new Set((fresh.charges ?? []).map((c) => c.limit.id));
  return a.requirements.slice(n).every((r) => (r.kind === 'budget' || r.kind === 'rate_limit') && limits.has(r.rule));
}

/** Fail closed: a call allowed with `$approval` whose approval changed, and no decision without it. */
function changedResult(fresh: DecisionResult, request: DecideRequest): DecisionResult {
  const reason = 'the cited approval changed while the call was decided';
  return { ...fresh, decision: 'deny', reason, message: modelMessage('deny', request.tool, reason, false) };
}

/**
 * Where a cited approval stands when a redeem did not consume it (docs/spec.md section 5.3), for the
 * answer to say: `unknown` (someone else's, or none: nothing is said of it), granted only as
 * `amended`, `denied`, for an `other` request (a changed call, presentation or result: a new
 * approval is needed), `spent` (consumed, expired or cancelled: never redeemable again), or
 * `waiting` (still pending, or granted for this very request and not consumable now).
 */
export type Standing =
  | { readonly is: 'unknown' }
  | {
      readonly is: 'amended' | 'denied' | 'other' | 'waiting';
      readonly approval: Approval;
      readonly cited: CitedApproval;
    }
  | { readonly is: 'spent'; readonly approval: Approval; readonly cited: CitedApproval; readonly status: SpentStatus };

type SpentStatus = 'consumed' | 'expired' | 'cancelled';

export function standingOf(approval: Approval | null, hash: string): Standing {
  if (approval === null) return { is: 'unknown' };
  const sameRequest = approval.hash === hash || approval.amended_hash === hash;
  const cited = citedOf(approval, sameRequest);
  const { status } = approval;
  const at = (is: 'amended' | 'denied' | 'other' | 'waiting'): Standing => ({ is, approval, cited });
  if (status === 'granted' && approval.amended_args !== null && approval.hash === hash) return at('amended');
  if (status === 'denied') return at('denied');
  if (!sameRequest) return at('other');
  if (status === 'consumed' || status === 'expired' || status === 'cancelled')
    return { is: 'spent', approval, cited, status };
  return at('waiting');
}

/** A denial as the model reads it: only the operator's message for the agent, never the note. */
export function deniedReason(a: Approval): string {
  return `an operator denied approval ${a.id}${a.decision_message ? `: ${a.decision_message}` : ''}`;
}

function citedOf(approval: Approval, sameRequest: boolean): CitedApproval {
  return { id: approval.id, status: approval.status, expiresAt: approval.expires_at, sameRequest };
}
