// Budgets and rate limits, the pure part (docs/spec.md section 2.9). decide() reports which of them
// select a call and by how much it would count (chargesFor); the route counts it in the database and
// hands back the ones the call would cross; settleCharges turns those into the final answer. The
// policy tests (`counters:` in a case) run the same settleCharges over standings they write down, so
// `gatehouse test` and `/decide` cannot disagree about what a full budget answers.
import { approvalHash } from '../json/canonical.js';
import { setNumberLexeme, type JsonObject } from '../json/value.js';
import { addAmounts, amountAt, compareAmounts, ONE, ZERO } from './amount.js';
import { CALLER_SELECTORS, selectorsMatch, type Subject } from './match.js';
import { modelMessage } from './message.js';
import {
  SEVERITY,
  type Amount,
  type ApprovalRequirement,
  type Budget,
  type Charge,
  type DecideRequest,
  type DecisionResult,
  type Identity,
  type Limit,
  type LimitScope,
  type PlannedLimit,
  type PolicySet,
} from './model.js';
import { readPath } from './path.js';

/** Where a counter stands: what decide()'s caller read or counted in the database. */
export interface Standing {
  /** A budget: the amount counted in its window (for `max_usd`, the spend reported). A rate limit: the calls allowed in the last `per`. */
  readonly counted: Amount;
  /** ISO times: a budget's window; for a rate limit, the last `per` up to now. */
  readonly windowStart: string;
  readonly windowEnd: string;
  /** A rate limit that is full: when its oldest counted call leaves the window (ISO). */
  readonly freesAt?: string;
}

/** A charge the call would cross (or cannot be counted in), and its counter's standing (null: undecidable, not read). */
export interface Refusal {
  readonly charge: Charge;
  readonly standing: Standing | null;
}

/**
 * The budgets and rate limits of `planned` that select this caller (their caller selectors and their
 * file's scope), each with its counter key and amount. Pure; an empty list when none does.
 */
export function chargesFor(
  planned: readonly PlannedLimit[],
  request: DecideRequest,
  identity: Identity,
  subject: Subject,
): Charge[] {
  const out: Charge[] = [];
  for (const { limit, fileScope } of planned) {
    if (fileScope !== undefined && !selectorsMatch(fileScope, subject, CALLER_SELECTORS)) continue;
    if (!selectorsMatch(limit.selectors, subject, CALLER_SELECTORS)) continue;
    out.push({ limit, key: counterKey(limit.scope, identity, request.run?.id), amount: amountOf(limit, request) });
  }
  return out;
}

/**
 * The `max_usd` budgets that spend reported for this tool counts in (POST /usage): those whose
 * selectors select the tool and the caller, as for a call of it, each with the caller's counter.
 */
export function usageCharges(set: PolicySet, tool: string, identity: Identity, runId: string | undefined): Charge[] {
  const plan = set.plan(tool);
  const usd = plan.limits.filter((p) => p.limit.type === 'budget' && 'usd' in p.limit.measure);
  if (usd.length === 0) return [];
  const view = plan.views[0]!; // a plan has at least one view
  return chargesFor(usd, { tool, args: {}, ...(runId !== undefined ? { run: { id: runId } } : {}) }, identity, {
    tool,
    kind: view.kind,
    tags: view.tags,
    env: set.env,
    identity,
  });
}

/**
 * The budgets and rate limits that can apply to this caller in the active environment (GET
 * /budgets): their caller and environment selectors, and their file's, match; whatever tools they
 * select.
 */
export function limitsForCaller(set: PolicySet, identity: Identity): Limit[] {
  const subject: Subject = { tool: '', kind: 'unknown', tags: new Set(), env: set.env, identity };
  const matches = (sel: Parameters<typeof selectorsMatch>[0] | undefined): boolean =>
    sel === undefined || (selectorsMatch(sel, subject, CALLER_SELECTORS) && selectorsMatch(sel, subject, ['envs']));
  return set.files.flatMap((f) =>
    matches(f.scope) ? [...f.budgets, ...f.rateLimits].filter((l) => matches(l.selectors)) : [],
  );
}

/**
 * The counter a scope puts the caller in. A run's counter is the caller's (`sub` and run id): one
 * caller's run id cannot spend another's budget. null when the call lacks what the scope needs.
 */
export function counterKey(scope: LimitScope, identity: Identity, runId: string | undefined): string | null {
  switch (scope) {
    case 'user':
      return `user:${identity.user}`;
    case 'team':
      return identity.team === null ? null : `team:${identity.team}`;
    case 'agent':
      return identity.agent === null ? null : `agent:${identity.agent}`;
    case 'run':
      // The run view is the runtime's text: one a database column cannot hold is no run id.
      return runId === undefined || runId === '' || !runId.isWellFormed() || /\p{Cc}/u.test(runId)
        ? null
        : `run:${identity.user}\n${runId}`;
    case 'global':
      return 'global';
  }
}

function amountOf(limit: Limit, request: DecideRequest): Amount | null {
  if (limit.type === 'rate_limit') return ONE;
  const m = limit.measure;
  if ('usd' in m) return ZERO;
  if ('calls' in m) return ONE;
  const hit = readPath(request.args, m.sum.segments);
  if (!hit.found || typeof hit.value !== 'number') return null;
  return amountAt(hit.parent, hit.key, hit.value);
}

/** Whether the call would cross the limit from this standing (undecidable: yes). The database's statements mean the same. */
export function wouldCross(charge: Charge, standing: Amount): boolean {
  if (charge.key === null || charge.amount === null) return true;
  const { limit } = charge;
  if (limit.type === 'rate_limit') return standing.value >= limit.calls;
  // Reported spend: refused once the window's spend has reached the budget.
  if ('usd' in limit.measure) return compareAmounts(standing, limit.max) >= 0;
  return compareAmounts(addAmounts(standing, charge.amount), limit.max) > 0;
}

/**
 * The final answer of a call that budgets or rate limits select, given the ones it would cross.
 * None: the answer stands (and the call counts). Otherwise the most severe `on_exceed` among them:
 * deny or abort by the first such limit in load order; require_approval with one requirement per
 * limit added after the policy's own (the hash covers them: a grant for a call within its budget
 * does not redeem it once it crosses one), each showing the limit, this call's amount and the
 * standing, which the hash does not cover (docs/spec.md section 4.3).
 */
export function settleCharges(
  result: DecisionResult,
  request: DecideRequest,
  refusals: readonly Refusal[],
): DecisionResult {
  if (refusals.length === 0) return result;
  let worst = refusals[0]!;
  for (const r of refusals) if (SEVERITY[r.charge.limit.onExceed] > SEVERITY[worst.charge.limit.onExceed]) worst = r;
  const decision = worst.charge.limit.onExceed;
  if (decision !== 'require_approval') {
    const reason = refusalReason(worst);
    return {
      decision,
      reason,
      rule: worst.charge.limit.id,
      policies: result.policies,
      message: modelMessage(decision, request.tool, reason, false),
      ...(result.charges ? { charges: result.charges } : {}),
    };
  }
  const own = result.decision === 'require_approval' && result.approval ? result.approval.requirements : [];
  const requirements = [...own, ...refusals.map((r) => requirementOf(r, request))];
  const first = requirements[0]!;
  const reason = own.length > 0 ? result.reason : first.reason;
  return {
    decision: 'require_approval',
    reason,
    rule: own.length > 0 ? result.rule : first.rule,
    policies: result.policies,
    approval: {
      kind: first.kind,
      capability: first.capability,
      presentation: first.presentation,
      requirements,
      hash: approvalHash({ tool: request.tool, args: request.args, context: request.context, requirements }),
    },
    message: modelMessage('require_approval', request.tool, reason, false),
    ...(result.charges ? { charges: result.charges } : {}),
  };
}

/** The kind of approval a limit asks for. */
export function limitKind(limit: Limit): 'budget' | 'rate_limit' {
  return limit.type;
}

function requirementOf(refusal: Refusal, request: DecideRequest): ApprovalRequirement {
  const { charge, standing } = refusal;
  const { limit } = charge;
  const presentation = limitPresentation(charge);
  return {
    policy: limit.policy,
    rule: limit.id,
    kind: limitKind(limit),
    reason: refusalReason(refusal),
    // The grant is for exactly this call.
    capability: { tool: request.tool, args: request.args },
    presentation,
    ...(standing !== null ? { standing: standingObject(limit, standing) } : {}),
  };
}

/**
 * What the operator is asked about, and what the hash binds: the limit (its id, maximum, window,
 * scope) and this call's amount. Never the standing, which another call can change between the
 * answer and the filing: a retry of the same call is the same approval.
 */
export function limitPresentation(charge: Charge): JsonObject {
  const { limit, amount } = charge;
  const out: JsonObject = {};
  if (limit.type === 'rate_limit') {
    out.rate_limit = limit.id;
    out.calls = limit.calls;
    out.per = limit.perText;
  } else {
    out.budget = limit.id;
    putAmount(out, 'usd' in limit.measure ? 'max_usd' : 'max', limit.max);
    out.per = limit.per.text;
    if ('sum' in limit.measure) out.sum = limit.measure.sum.text;
    if (!('usd' in limit.measure) && amount !== null) putAmount(out, 'amount', amount);
  }
  out.scope = limit.scope;
  return out;
}

/** A standing as JSON, numbers exact. */
export function standingObject(limit: Limit, standing: Standing): JsonObject {
  const out: JsonObject = {};
  putAmount(out, limit.type === 'rate_limit' ? 'calls' : 'counted', standing.counted);
  out.window_start = standing.windowStart;
  out.window_end = standing.windowEnd;
  if (standing.freesAt !== undefined) out.frees_at = standing.freesAt;
  return out;
}

/** obj[key] = the amount as a JSON number written exactly (canonical JSON keeps the text). */
export function putAmount(obj: JsonObject, key: string, amount: Amount): void {
  obj[key] = amount.value;
  if (String(amount.value) !== amount.written) setNumberLexeme(obj, key, amount.written);
}

const SCOPE_TEXT: Readonly<Record<LimitScope, string>> = {
  user: 'per user',
  team: 'per team',
  agent: 'per agent',
  run: 'per run',
  global: 'for everyone',
};

/** The budget's window in words: `per day (UTC)`, `per 3600 s`. */
export function windowText(budget: Budget): string {
  return 'calendar' in budget.per ? `per ${budget.per.calendar} (UTC)` : `per ${budget.per.seconds} s`;
}

/** Why a call is refused: the policy's names and Gatehouse's counts, never the call's argument values. */
export function refusalReason({ charge, standing }: Refusal): string {
  const { limit } = charge;
  const what = limit.type === 'rate_limit' ? `rate limit "${limit.id}"` : `budget "${limit.id}"`;
  if (charge.key === null) {
    const missing =
      limit.scope === 'run' ? 'the call has no run id (run.id)' : `the caller's token has no ${limit.scope}`;
    return `${what} counts ${SCOPE_TEXT[limit.scope]}, and ${missing}`;
  }
  if (charge.amount === null && limit.type === 'budget' && 'sum' in limit.measure) {
    return `${what} counts \`${limit.measure.sum.text}\`, which this call does not carry as a non-negative number`;
  }
  const counted = standing?.counted.text ?? '?';
  if (limit.type === 'rate_limit') {
    return `${what} allows ${limit.calls} calls in any ${limit.perSeconds} s ${SCOPE_TEXT[limit.scope]}, and ${counted} were allowed in the last ${limit.perSeconds} s`;
  }
  if ('usd' in limit.measure) {
    return `${what} allows ${limit.max.text} USD of reported spend ${windowText(limit)} ${SCOPE_TEXT[limit.scope]}, and ${counted} USD is reported in this window`;
  }
  const of = 'sum' in limit.measure ? ` of \`${limit.measure.sum.text}\`` : ' calls';
  return `${what} allows ${limit.max.text}${of} ${windowText(limit)} ${SCOPE_TEXT[limit.scope]}, ${counted} counted in this window: this call would cross it`;
}
