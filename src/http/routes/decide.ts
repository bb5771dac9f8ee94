// POST /decide, the hot path (docs/spec.md sections 1 and 5.3): the strict body and the token, then
// the engine (src/engine/decide.ts), then 200 for allow and 403 otherwise.
import type { FastifyInstance } from 'fastify';
import type { Identity } from '../../policy/model.js';
import { toDecideRequest, toolCallSchema, type ToolCall } from '../../policy/request.js';
import type { AppContext } from '../context.js';
import { idempotencyClaim } from '../idempotency.js';
import { sendAnswer } from '../reply.js';

export interface DecideBody extends ToolCall {
  approval_id?: string;
}

/** /decide also takes the approval to redeem. */
export const decideBodySchema = {
  ...toolCallSchema,
  properties: { ...toolCallSchema.properties, approval_id: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

export function decideRoute(app: FastifyInstance, ctx: AppContext): void {
  const { engine } = ctx;
  app.post('/decide', { schema: { body: decideBodySchema } }, async (request, reply) => {
    const identity = request.identity as Identity;
    const body = request.body as DecideBody;
    const answer = engine.decide({
      request: toDecideRequest(body),
      identity,
      approvalId: body.approval_id,
      claim: () => idempotencyClaim(request, 'decide', identity),
      log: request.log,
    });
    return sendAnswer(reply, answer instanceof Promise ? await answer : answer);
  });
}
