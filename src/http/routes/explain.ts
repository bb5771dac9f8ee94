// POST /explain: the decision of /decide (same body, same status) plus the trace of every rule of
// every file considered. It never redeems an approval (`approval_id` is an unknown field here).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { explain } from '../../policy/decide.js';
import type { Identity } from '../../policy/model.js';
import type { AppContext } from '../app.js';
import { toDecideRequest, toolCallSchema, type ToolCall } from '../../policy/request.js';
import { sendDecision } from './decide.js';

export function explainRoute(app: FastifyInstance, ctx: AppContext): void {
  app.post('/explain', { schema: { body: toolCallSchema } }, async (request, reply) => {
    const body = request.body as ToolCall;
    const result = explain(ctx.policies.current(), toDecideRequest(body), request.identity as Identity);
    return sendDecision(reply, result, randomUUID(), { trace: result.trace });
  });
}
