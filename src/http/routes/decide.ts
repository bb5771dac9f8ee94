// POST /decide: the hot path. Strict body → decide() over the current policy set → 200 allow or
// 403 otherwise (docs/spec.md section 1), one decision log line, metrics. With `approval_id` the request is
// decided again from scratch and a matching granted approval is redeemed (src/approvals).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TransactionSql } from 'postgres';
import type { KeptAnswer, StoredAnswer } from '../../approvals/idempotency.js';
import type { CitedApproval } from '../../approvals/service.js';
import { decide } from '../../policy/decide.js';
import type { DecideRequest, DecisionResult, Identity, PolicySet } from '../../policy/model.js';
import { toDecideRequest, toolCallSchema, type ToolCall } from '../../policy/request.js';
import type { AppContext } from '../context.js';
import { approvalKindField, decisionFacts } from '../decision-facts.js';
import { answerInTransaction, isCounted, limitsOf, RolledBack, settleDecision, settleOnLanes, type Settled } from '../counted.js';
import { decisionAnswer, sendDecision } from '../decisions.js';
import { HttpError } from '../errors.js';
import { idempotencyClaim, sendAnswer } from '../idempotency.js';
import { keptOfDecision, replayedDecision } from '../replays.js';
import { decideInShadow } from '../shadow.js';

export interface DecideBody extends ToolCall {
  approval_id?: string;
}

/** /decide also takes the approval to redeem. */
export const decideBodySchema = {
  ...toolCallSchema,
  properties: { ...toolCallSchema.properties, approval_id: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

export function decideRoute(app: FastifyInstance, ctx: AppContext): void {
  app.post('/decide', { schema: { body: decideBodySchema } }, async (request, reply) => {
    const identity = request.identity as Identity;
    const body = request.body as DecideBody;
    const decisionId = randomUUID();
    const req = toDecideRequest(body);
    const started = process.hrtime.bigint();
    const set = ctx.policies.current();
    // Every request is decided for its own caller first, an Idempotency-Key's retry included: what a
    // key kept answers it only when this decision still stands behind it (../replays.ts).
    const fresh = decide(set, req, identity);
    const durationUs = Number(process.hrtime.bigint() - started) / 1000;
    if (ctx.shadow) decideInShadow(ctx, request, decisionId, req, identity, fresh);
    if (!isCounted(fresh) && (body.approval_id === undefined || fresh.internalError)) {
      // The hot path: no database, no closure.
      logDecision(ctx, request, decisionId, req, set, identity, durationUs, body.approval_id, fresh.decision, fresh.rule, approvalKindField(fresh));
      return sendDecision(reply, fresh, decisionId, nextOf(fresh, null));
    }
    const log = (decision: DecisionResult['decision'], rule: string, extra?: Record<string, unknown>): void =>
      logDecision(ctx, request, decisionId, req, set, identity, durationUs, body.approval_id, decision, rule, extra);
    // Budgets and rate limits select the call: it is counted in the database before it is answered.
    if (isCounted(fresh)) {
      const keyed = keyedReplay(ctx, fresh, req, identity);
      const limits = limitsOf(ctx);
      const claim = idempotencyClaim(request, 'decide', identity);
      let settled: Settled | undefined;
      // Nothing but counting to do in the transaction: on the lanes.
      const one = claim === undefined && body.approval_id === undefined ? settleOnLanes(limits, fresh, req) : undefined;
      if (one !== undefined) settled = await one;
      const answer =
        settled !== undefined
          ? { ...decisionAnswer(settled.result, decisionId, nextOf(settled.result, null)), replayed: false }
          : await answerInTransaction(
              ctx,
              limits,
              claim,
              async (tx) => {
                const s = await settleDecision(tx, limits, ctx.approvals, fresh, req, identity, body.approval_id);
                settled = s;
                const given = decisionAnswer(s.result, decisionId, nextOf(s.result, s.cited));
                if (s.rollback) throw new RolledBack(given);
                return { answer: given, kept: keptOfDecision(s.result, decisionId, s.counted) };
              },
              keyed.replay,
            );
      if (answer.replayed && keyed.replayed !== undefined) {
        const r = keyed.replayed;
        log(r.result.decision, r.result.rule, { replayed: true, replayed_decision_id: r.decisionId });
      } else {
        const final = settled?.result ?? fresh;
        log(final.decision, final.rule, settled === undefined ? undefined : { budgets: countedLog(settled) });
      }
      return sendAnswer(reply, answer);
    }
    const claim = idempotencyClaim(request, 'decide', identity);
    if (ctx.approvals === null) throw new HttpError('unavailable', 'approvals are not configured', { retryAfterSec: 5 });
    const { approvals } = ctx;
    const approvalId = body.approval_id as string; // not the hot path: cited
    // A sub the store cannot hold is the token's 401 (errors.ts), never a 500.
    // Only a require_approval can consume a grant: any other answer changes nothing, and needs no key.
    if (claim !== undefined && fresh.decision === 'require_approval') {
      // The redeem and what the key keeps of it in one transaction: a retry is answered from it.
      const keyed = keyedReplay(ctx, fresh, req, identity);
      let result = fresh;
      const answer = await approvals.store.idempotent(
        claim,
        async (tx) => {
          const redeemed = await approvals.redeem(fresh, req, approvalId, identity, tx);
          result = redeemed.result;
          return { answer: decisionAnswer(result, decisionId, nextOf(result, redeemed.cited)), kept: keptOfDecision(result, decisionId, false) };
        },
        keyed.replay,
      );
      const r = answer.replayed ? keyed.replayed : undefined;
      if (r !== undefined) log(r.result.decision, r.result.rule, { replayed: true, replayed_decision_id: r.decisionId });
      else log(result.decision, result.rule);
      return sendAnswer(reply, answer);
    }
    const redeemed = await approvals.redeem(fresh, req, approvalId, identity);
    log(redeemed.result.decision, redeemed.result.rule);
    return sendDecision(reply, redeemed.result, decisionId, nextOf(redeemed.result, redeemed.cited));
  });
}

/**
 * How a keyed /decide retry is answered from what its key kept: the allow rebuilt under the decision
 * id first given, when the decision made now stands behind it; `replayed` says which, for the log.
 */
function keyedReplay(
  ctx: AppContext,
  fresh: DecisionResult,
  req: DecideRequest,
  identity: Identity,
): { replay: (tx: TransactionSql, kept: KeptAnswer) => Promise<StoredAnswer | null>; readonly replayed: Replayed | undefined } {
  let replayed: Replayed | undefined;
  return {
    async replay(tx, kept) {
      replayed = (await replayedDecision(ctx.approvals, tx, kept, fresh, req, identity)) ?? undefined;
      return replayed === undefined ? null : decisionAnswer(replayed.result, replayed.decisionId, nextOf(replayed.result, null));
    },
    get replayed() {
      return replayed;
    },
  };
}

type Replayed = { result: DecisionResult; decisionId: string };

/**
 * What the decision log says of a counted call: each limit, whether the call counted in it (an
 * allowed call counts in all of them but `max_usd` budgets, which count reported spend, and those it
 * cannot be counted in), and its counter as read or left (null: undecidable).
 */
function countedLog(settled: Settled): { id: string; counted: boolean; standing: string | null }[] {
  const charges = [...settled.outcome.standings.keys(), ...settled.outcome.refusals.filter((r) => r.standing === null).map((r) => r.charge)];
  return charges.map((charge) => ({
    id: charge.limit.id,
    counted: settled.counted && charge.key !== null && charge.amount !== null && !(charge.limit.type === 'budget' && 'usd' in charge.limit.measure),
    standing: settled.outcome.standings.get(charge)?.counted.text ?? null,
  }));
}

/** The decision's log line (written before the answer is sent) and its metrics. */
function logDecision(
  ctx: AppContext,
  request: FastifyRequest,
  decisionId: string,
  req: DecideRequest,
  set: PolicySet,
  identity: Identity,
  durationUs: number,
  approvalId: string | undefined,
  decision: DecisionResult['decision'],
  rule: string,
  extra: Record<string, unknown> | undefined,
): void {
  ctx.metrics.decisions.inc({ decision, rule });
  ctx.metrics.decideSeconds.observe(durationUs / 1e6);
  const line = {
    decision_id: decisionId,
    tool: req.tool,
    decision,
    rule,
    policies: set.digests,
    user: identity.user,
    team: identity.team,
    agent: identity.agent,
    duration_us: Math.round(durationUs * 10) / 10,
    ...(approvalId !== undefined ? { approval_id: approvalId } : {}),
    ...(req.run?.id !== undefined ? { run_id: req.run.id } : {}),
    ...decisionFacts(ctx.logArgs, set.env, req, identity), // the set that decided, not one reloaded since
    ...extra,
  };
  request.log.info(line, 'decision');
  ctx.decisionStore?.writer.push(line); // DECISION_STORE: queued, written off the hot path (src/decisions/writer.ts)
}

/** `next` for a require_approval answer, nothing for the others. */
function nextOf(result: DecisionResult, cited: CitedApproval | null): Record<string, unknown> | undefined {
  return result.decision === 'require_approval' ? { next: nextStep(cited) } : undefined;
}

const FILE = Object.freeze({ action: 'file', url: '/approvals' });
const FILE_NEW = Object.freeze({ action: 'file_new', url: '/approvals' });

/** What a client does to resume a require_approval (docs/spec.md section 5.3, "What to do next"). */
export function nextStep(cited: CitedApproval | null): Readonly<Record<string, string>> {
  if (cited === null) return FILE;
  if (cited.sameRequest && cited.status === 'pending') return { action: 'wait', url: `/approvals/${cited.id}?wait=60`, expires_at: cited.expiresAt };
  // Spent (consumed, expired, cancelled) or asked for another request: it can never redeem this call.
  return FILE_NEW;
}
