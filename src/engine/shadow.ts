// Shadow mode (SHADOW_POLICY_DIR, docs/policy-changes.md): a second policy set decides every /decide
// request beside the serving one and never changes its answer. Where the two disagree, the
// disagreement is counted (gatehouse_shadow_disagreements_total{serving, shadow, rule}) and logged
// with both decisions. Called after the serving decision, only when the shadow set is configured.
import type { CallLog } from './parts.js';
import { decide } from '../policy/decide.js';
import type { LivePolicies } from '../policy/live.js';
import type { DecideRequest, DecisionResult, Identity } from '../policy/model.js';
import type { Metrics } from './metrics.js';

export function decideInShadow(
  shadow: LivePolicies,
  metrics: Metrics,
  log: CallLog,
  decisionId: string,
  req: DecideRequest,
  identity: Identity,
  serving: DecisionResult,
): void {
  try {
    const set = shadow.current();
    const got = decide(set, req, identity); // never throws: an internal failure is a deny
    metrics.shadowDecisions.inc();
    if (got.decision === serving.decision) return;
    metrics.shadowDisagreements.inc({ serving: serving.decision, shadow: got.decision, rule: got.rule });
    log.info(
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
    log.error({ err, decision_id: decisionId }, 'shadow decision failed');
  }
}
