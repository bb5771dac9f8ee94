// /explain (docs/spec.md section 5.5): the decision of /decide plus the trace of every rule of every
// file considered. It never redeems an approval. A call that budgets or rate limits select is
// answered as /decide would answer it now, from the counters it reads (never counting it), and the
// trace shows them.
import { randomUUID } from 'node:crypto';
import { assignMembers } from '../json/value.js';
import { explain, type ExplainResult } from '../policy/decide.js';
import { standingObject, wouldCross } from '../policy/limits.js';
import type { DecideRequest, Identity } from '../policy/model.js';
import { decided, type Answer } from './answer.js';
import { isCounted, limitsOf, settleExplained } from './limits.js';
import type { EngineParts } from './parts.js';

export async function explainCall(parts: EngineParts, req: DecideRequest, identity: Identity): Promise<Answer> {
  const result: ExplainResult = explain(parts.policies.current(), req, identity);
  if (!isCounted(result) || result.internalError) return decided(result, randomUUID(), { trace: result.trace });
  const limits = limitsOf(parts.limits);
  const settled = await limits.transaction((tx) => settleExplained(tx, limits, result, req));
  // Each selecting limit's counter as read (no user id: the key is not shown), and whether this call would cross it.
  const counters = new Map(result.charges.map((c) => [c.limit.id, c]));
  const trace = {
    ...result.trace,
    limits: (result.trace.limits ?? []).map((t) => {
      const charge = counters.get(t.id);
      const standing = charge === undefined ? undefined : settled.outcome.standings.get(charge);
      if (charge === undefined || standing === undefined) return t;
      const counter = assignMembers({}, standingObject(charge.limit, standing)); // its numbers as counted
      counter.would_cross = wouldCross(charge, standing.counted);
      return { ...t, counter };
    }),
  };
  return decided(settled.result, randomUUID(), { trace }, true);
}
