// POST /explain: the decision of /decide (same body, same status) plus the trace of every rule of
// every file considered. It never redeems an approval.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { explain } from '../../policy/decide.js';
import type { Identity } from '../../policy/model.js';
import type { AppContext } from '../app.js';
import { HttpError } from '../errors.js';
import { decideBodySchema, sendDecision, toDecideRequest, type DecideBody } from './decide.js';

export function explainRoute(app: FastifyInstance, ctx: AppContext): void {
  app.post('/explain', { schema: { body: decideBodySchema } }, async (request, reply) => {
    const body = request.body as DecideBody;
    if (body.approval_id !== undefined) {
      throw new HttpError('invalid_body', 'explain does not redeem approvals: leave out approval_id', {
        errors: [{ pointer: '/approval_id', message: 'not accepted by /explain' }],
      });
    }
    const result = explain(ctx.policies.current(), toDecideRequest(body), request.identity as Identity);
    return sendDecision(reply, result, randomUUID(), { trace: result.trace });
  });
}
