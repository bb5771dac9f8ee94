// POST /explain (a policy reader role): the decision of /decide (same body, same status) plus the
// trace (src/engine/explain.ts). The trace shows every rule, threshold and condition: an agent that
// could read it could map what it must stay under, so the role is checked before the body is read.
import type { FastifyInstance } from 'fastify';
import type { Identity } from '../../policy/model.js';
import { toDecideRequest, toolCallSchema, type ToolCall } from '../../policy/request.js';
import { requireRole } from '../auth.js';
import type { AppContext } from '../context.js';
import { sendAnswer } from '../reply.js';

export function explainRoute(app: FastifyInstance, ctx: AppContext): void {
  app.post(
    '/explain',
    { schema: { body: toolCallSchema }, onRequest: requireRole(...ctx.policyReaderRoles) },
    async (request, reply) => {
      const answer = await ctx.engine.explain(toDecideRequest(request.body as ToolCall), request.identity as Identity);
      return sendAnswer(reply, answer);
    },
  );
}
