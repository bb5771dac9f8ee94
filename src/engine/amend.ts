// An approver's grant, amended or not (docs/spec.md section 5.4, "Amend and grant"). An amended call is
// decided again under the serving policy, for the requester and context the approval stores: a deny
// or abort refuses the amendment; otherwise the grant is bound to the amended call's hash, which is
// what the requester's next /decide with the amended arguments computes.
import type { JsonObject } from '../json/value.js';
import { decide } from '../policy/decide.js';
import type { Identity } from '../policy/model.js';
import type { Approval, Approver } from '../approvals/approval.js';
import type { TransitionResult } from '../approvals/store.js';
import { approvalHash, canonicalize } from '../json/canonical.js';
import { AmendmentRefusedError } from './errors.js';
import { approvalsOf } from './limits.js';
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
  const { id, approver, note, args } = call;
  if (args === undefined) return store.grant(id, approver, note);
  const approval = await store.get(id);
  // Not pending, not found or the approver's own: the grant path answers it as it would any grant.
  if (approval === null || approval.status !== 'pending' || approval.requester.sub === approver.sub)
    return store.grant(id, approver, note);
  // The same arguments as the call stands now: a plain grant (one grant per person still holds).
  if (canonicalize(args) === canonicalize(approval.amended_args ?? approval.args))
    return store.grant(id, approver, note);
  if (approval.result !== undefined)
    throw new AmendmentRefusedError('the review of a tool result cannot be amended: grant or deny it', null);
  if (approval.requirements.some((r) => r.kind === 'budget' || r.kind === 'rate_limit'))
    throw new AmendmentRefusedError('an approval a budget or rate limit asked for cannot be amended', null);
  const decided = decide(parts.policies.current(), amendedRequest(approval, args), requesterOf(approval));
  if (decided.decision === 'deny' || decided.decision === 'abort' || decided.internalError)
    throw new AmendmentRefusedError(`the policy answers ${decided.decision} to the amended call`, decided);
  // A call counted by budgets or rate limits is counted when it is redeemed, under requirements this
  // grant could not know of: refused rather than bound to a hash the redeem would not compute.
  if (decided.charges !== undefined && decided.charges.length > 0)
    throw new AmendmentRefusedError('a call that budgets or rate limits count cannot be amended', decided);
  if (decided.decision === 'require_approval') {
    if (decided.approval === undefined) throw new Error('require_approval without its approval');
    return store.amend(id, approver, note, {
      args,
      hash: decided.approval.hash,
      requirements: decided.approval.requirements,
    });
  }
  // Allowed outright: the filed requirements still say who must grant it.
  const hash = approvalHash({
    tool: approval.tool,
    args,
    context: approval.context,
    requirements: approval.requirements,
  });
  return store.amend(id, approver, note, { args, hash, requirements: null });
}

function amendedRequest(approval: Approval, args: JsonObject) {
  return {
    tool: approval.tool,
    args,
    ...(approval.context !== undefined ? { context: approval.context } : {}),
  };
}

/**
 * The requester as the approval stores it. Its roles and claims are not stored: a condition that reads
 * them cannot be decided and fails closed (docs/spec.md section 5.4).
 */
function requesterOf(approval: Approval): Identity {
  const { sub, team, agent, name } = approval.requester;
  return { user: sub, team, agent, roles: [], ...(name !== null ? { name } : {}) };
}
