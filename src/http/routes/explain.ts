// POST /explain (a policy reader role): the decision of /decide (same body, same status) plus the
// trace of every rule of every file considered. It never redeems an approval (`approval_id` is an
// unknown field here). The trace shows every rule, threshold and condition: an agent that could read
// it could map what it must stay under, so the role is checked before the body is read. A call that
// budgets or rate limits select is answered as /decide would answer it now, from the counters it
// reads (never counting it), and the trace shows them.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { assignMembers } from '../../json/value.js';
import { explain, type ExplainResult } from '../../policy/decide.js';
import { standingObject, wouldCross } from '../../policy/limits.js';
import type { Identity } from '../../policy/model.js';
import type { AppContext } from '../context.js';
import { requireRole } from '../auth.js';
import { toDecideRequest, toolCallSchema, type ToolCall } from '../../policy/request.js';
import { isCounted, limitsOf, settleExplained } from '../counted.js';
import { sendDecision } from '../decisions.js';

export function explainRoute(app: FastifyInstance, ctx: AppContext): void {
  app.post('/explain', { schema: { body: toolCallSchema }, onRequest: requireRole(...ctx.policyReaderRoles) }, async (request, reply) => {
    const body = request.body as ToolCall;
    const req = toDecideRequest(body);
    const result: ExplainResult = explain(ctx.policies.current(), req, request.identity as Identity);
    if (!isCounted(result) || result.internalError) return sendDecision(reply, result, randomUUID(), { trace: result.trace });
    const limits = limitsOf(ctx);
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
    return sendDecision(reply, settled.result, randomUUID(), { trace }, true);
  });
}
