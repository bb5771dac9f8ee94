// Shadow mode (SHADOW_POLICY_DIR, docs/policy-changes.md): a second policy set decides every /decide
// request beside the serving one and never changes its answer. Where the two disagree, the
// disagreement is counted (gatehouse_shadow_disagreements_total{serving, shadow, rule}) and logged
// with both decisions. Called after the serving decision, only when the shadow set is configured.
import type { FastifyRequest } from 'fastify';
import { decide } from '../policy/decide.js';
import type { DecideRequest, DecisionResult, Identity } from '../policy/model.js';
import type { AppContext } from './context.js';

export function decideInShadow(
  ctx: AppContext,
  request: FastifyRequest,
  decisionId: string,
  req: DecideRequest,
  identity: Identity,
  serving: DecisionResult,
): void {
  const shadow = ctx.shadow;
  if (!shadow) return;
  try {
    const set = shadow.current();
    const got = decide(set, req, identity); // never throws: an internal failure is a deny
    ctx.metrics.shadowDecisions.inc();
    if (got.decision === serving.decision) return;
    ctx.metrics.shadowDisagreements.inc({ serving: serving.decision, shadow: got.decision, rule: got.rule });
    request.log.info(
      {
        decision_id: decisionId,
        tool: req.tool,
        decision: serving.decision,
        rule: serving.rule,
        shadow_decision: got.decision,
        shadow_rule: got.rule,
        shadow_policies: set.digests,
        user: identity.user,
      },
      'shadow disagreement',
    );
  } catch (err) {
    // The shadow is an observer: whatever goes wrong in it, the serving answer stands.
    request.log.error({ err, decision_id: decisionId }, 'shadow decision failed');
  }
}
