// The approval a runtime files itself after a crash (docs/spec.md section 5.4, "Interrupted side
// effects"): it cannot tell whether a call decided before the crash ran, and asks a person. No policy
// asked for it, so its one requirement is the runtime's, with the default shape {tool, args}; its
// hash is section 4.3's, as a rule asking `kind: interrupted_side_effect` with the default shape
// would give, so such a rule redeems it as its own.
import { approvalHash } from '../json/canonical.js';
import type { ApprovalDescriptor, DecideRequest, DecisionResult, PolicyIdentity } from './model.js';

export const INTERRUPTED_KIND = 'interrupted_side_effect';
/** The requirement's `policy` and `rule`: no file asked, the runtime did. */
export const INTERRUPTED_POLICY = 'runtime';
export const INTERRUPTED_RULE = 'runtime#interrupted_side_effect';
const REASON =
  'the runtime was interrupted after this call was decided and cannot tell whether it ran: did it run before the crash? grant to run it again';

/** The approval a runtime asks for `request`: capability and presentation are both {tool, args}. */
export function interruptedApproval(request: DecideRequest): ApprovalDescriptor {
  const shape = { tool: request.tool, args: request.args };
  const hash = approvalHash({
    tool: request.tool,
    args: request.args,
    context: request.context,
    kind: INTERRUPTED_KIND,
    capability: shape,
    presentation: shape,
  });
  return {
    kind: INTERRUPTED_KIND,
    capability: shape,
    presentation: shape,
    requirements: [
      {
        policy: INTERRUPTED_POLICY,
        rule: INTERRUPTED_RULE,
        kind: INTERRUPTED_KIND,
        reason: REASON,
        capability: shape,
        presentation: shape,
      },
    ],
    hash,
  };
}

/** The require_approval a filing of an interrupted call stands on, as if a rule had asked it. */
export function interruptedResult(request: DecideRequest, policies: readonly PolicyIdentity[]): DecisionResult {
  return {
    decision: 'require_approval',
    reason: REASON,
    rule: INTERRUPTED_RULE,
    policies,
    approval: interruptedApproval(request),
    message: `The "${request.tool}" action was interrupted by a crash and needs an operator's approval to run again.`,
  };
}
