// POST /explain (a policy reader role): the decision of /decide (same body, same status) plus the
// trace of every rule of every file considered. It never redeems an approval (`approval_id` is an
// unknown field here). The trace shows every rule, threshold and condition: an agent that could read
// it could map what it must stay under, so the role is checked before the body is read.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { explain } from '../../policy/decide.js';
import type { Identity } from '../../policy/model.js';
import type { AppContext } from '../context.js';
import { requireRole } from '../auth.js';
import { toDecideRequest, toolCallSchema, type ToolCall } from '../../policy/request.js';
import { sendDecision } from '../decisions.js';

export function explainRoute(app: FastifyInstance, ctx: AppContext): void {
  app.post('/explain', { schema: { body: toolCallSchema }, onRequest: requireRole(...ctx.policyReaderRoles) }, async (request, reply) => {
    const body = request.body as ToolCall;
    const result = explain(ctx.policies.current(), toDecideRequest(body), request.identity as Identity);
    return sendDecision(reply, result, randomUUID(), { trace: result.trace });
  });
}
