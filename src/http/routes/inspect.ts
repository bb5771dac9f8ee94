// POST /inspect (docs/spec.md section 5.11): what comes back, a tool's result or a model's request or
// response, against the guards on its stage. The strict body and the token, then the engine
// (src/engine/inspect.ts): 200 for allow (with the value redacted, when a guard redacted), 403 otherwise.
import type { FastifyInstance } from 'fastify';
import type { Identity } from '../../policy/model.js';
import { inspectionSchema, toInspectRequest, type Inspection } from '../../policy/request.js';
import type { AppContext } from '../context.js';
import { sendAnswer } from '../reply.js';

/** /inspect also takes, on the result stage, the approval of a review to redeem. */
export const inspectBodySchema = {
  ...inspectionSchema,
  properties: { ...inspectionSchema.properties, approval_id: { type: 'string', minLength: 1, maxLength: 64 } },
  else: {
    ...inspectionSchema.else,
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else, never awaited
    then: {
      ...inspectionSchema.else.then,
      properties: { ...inspectionSchema.else.then.properties, approval_id: false },
    },
  },
} as const;

export function inspectRoute(app: FastifyInstance, ctx: AppContext): void {
  const { engine } = ctx;
  app.post('/inspect', { schema: { body: inspectBodySchema } }, async (request, reply) => {
    const identity = request.identity as Identity;
    const body = request.body as Inspection & { approval_id?: string };
    const answer = engine.inspect({
      request: toInspectRequest(body),
      identity,
      approvalId: body.approval_id,
      log: request.log,
    });
    return sendAnswer(reply, answer instanceof Promise ? await answer : answer);
  });
}
