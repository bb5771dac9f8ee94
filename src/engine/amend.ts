// An approver's grant, amended or not (docs/spec.md section 5.4, "Amend and grant"). An amended call is
// decided again under the serving policy, for the requester and context the approval stores, and,
// when budgets or rate limits select it, against their counters as they stand (read, never counted:
// the call counts when it is redeemed). A deny or abort refuses the amendment; otherwise the grant is
// bound to the amended call's hash, which is what the requester's next /decide with the amended
// arguments computes.
import type { JsonObject } from '../json/value.js';
import { decide } from '../policy/decide.js';
import type { DecideRequest, DecisionResult, Identity } from '../policy/model.js';
import { plainNumbers } from '../json/plain-numbers.js';
import { INTERRUPTED_KIND } from '../policy/interrupted.js';
import type { Approval, Approver } from '../approvals/approval.js';
import type { TransitionResult } from '../approvals/store.js';
import { approvalHash, canonicalize } from '../json/canonical.js';
import { AmendmentRefusedError } from './errors.js';
import { approvalsOf, isCounted, limitsOf, settleExplained } from './limits.js';
import type { EngineParts } from './parts.js';

export interface GrantCall {
  readonly id: string;
  readonly approver: Approver;
  readonly note: string | null;
  /** The amended arguments; absent: the call is granted as it stands. */
  readonly args?: JsonObject | undefined;
}

export async function grantCall(parts: EngineParts, call: GrantCall): Promise<TransitionResult> {
  const { store } = approvalsOf(parts.approvals);
  const { id, approver, note } = call;
  if (call.args === undefined) return store.grant(id, approver, note);
  // As a client will send them back (450.50 as 450.5), so that its redeem hashes the same.
  const args = plainNumbers(call.args);
  const approval = await store.get(id);
  // Not pending, not found or the approver's own: the grant path answers it as it would any grant.
  if (approval === null || approval.status !== 'pending' || approval.requester.sub === approver.sub)
    return store.grant(id, approver, note);
  // The same arguments as the call stands now: a plain grant (one grant per person still holds).
  if (canonicalize(args) === canonicalize(approval.amended_args ?? approval.args))
    return store.grant(id, approver, note);
  if (approval.result !== undefined)
    throw new AmendmentRefusedError('the review of a tool result cannot be amended: grant or deny it', null);
  if (approval.kind === INTERRUPTED_KIND)
    throw new AmendmentRefusedError('an interrupted side effect is answered as it is: grant or deny it', null);
  const request = amendedRequest(approval, args);
  const decided = await decideAmended(parts, request, requesterOf(approval));
  if (decided.decision === 'deny' || decided.decision === 'abort' || decided.internalError)
    throw new AmendmentRefusedError(`the policy answers ${decided.decision} to the amended call`, decided);
  if (decided.decision === 'require_approval') {
    if (decided.approval === undefined) throw new Error('require_approval without its approval');
    return store.amend(id, approver, note, {
      args,
      hash: decided.approval.hash,
      requirements: decided.approval.requirements,
    });
  }
  // Allowed outright (for one a budget or rate limit asked for: the amended call fits in it now): the
  // filed requirements still say who must grant it.
  const hash = approvalHash({
    tool: approval.tool,
    args,
    context: approval.context,
    requirements: approval.requirements,
  });
  return store.amend(id, approver, note, { args, hash, requirements: null });
}

/**
 * The amended call's decision as its filing would settle it (./file.ts): a call that budgets or rate
 * limits select is settled against their counters, only read here (settleExplained), so that nothing
 * is counted by a grant; the redeem counts it (or, granted past a limit, counts it past it).
 */
async function decideAmended(parts: EngineParts, request: DecideRequest, identity: Identity): Promise<DecisionResult> {
  const fresh = decide(parts.policies.current(), request, identity);
  if (!isCounted(fresh)) return fresh;
  const limits = limitsOf(parts.limits);
  const settled = await limits.transaction((tx) => settleExplained(tx, limits, fresh, request));
  return settled.result;
}

/** The amended call: the run id the approval was filed under is kept, which a budget per run counts by. */
function amendedRequest(approval: Approval, args: JsonObject): DecideRequest {
  return {
    tool: approval.tool,
    args,
    ...(approval.run_id !== null ? { run: { id: approval.run_id } } : {}),
    ...(approval.context !== undefined ? { context: approval.context } : {}),
  };
}

/**
 * The requester as the approval stores it. Its roles and claims are not stored: it has no roles, and
 * a condition reading its claims cannot be decided and fails closed (docs/spec.md section 5.4).
 */
function requesterOf(approval: Approval): Identity {
  const { sub, team, agent, name } = approval.requester;
  return { user: sub, team, agent, roles: [], ...(name !== null ? { name } : {}) };
}
