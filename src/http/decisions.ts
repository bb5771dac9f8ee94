// How a decision is answered, the same way by every route that decides: /decide, /explain and the
// refusals of POST /approvals.
import type { FastifyReply } from 'fastify';
import type { JsonObject } from '../json/value.js';
import type { DecisionResult } from '../policy/model.js';
import { HttpError, sendProblem } from './errors.js';
import { sendCanonical } from './reply.js';

/** The response body of a decision (docs/spec.md section 5). */
export function decisionBody(result: DecisionResult, decisionId: string): Record<string, unknown> {
  return {
    decision: result.decision,
    reason: result.reason,
    rule: result.rule,
    policies: result.policies,
    ...(result.approval ? { approval: result.approval } : {}),
    message: result.message,
    decision_id: decisionId,
  };
}

/** Send a decision: 200 only for allow; an internal failure is a 500 problem that allows nothing. */
export function sendDecision(reply: FastifyReply, result: DecisionResult, decisionId: string, extra?: Record<string, unknown>): FastifyReply {
  if (result.internalError) {
    return sendProblem(
      reply,
      new HttpError('internal', 'the decision could not be made; nothing was allowed', {
        body: { decision: 'deny', decision_id: decisionId },
      }),
    );
  }
  const body = decisionBody(result, decisionId);
  const payload = extra ? { ...body, ...extra } : body;
  reply.code(result.decision === 'allow' ? 200 : 403);
  // An approval's capability and presentation carry the request's numbers (reply.ts). Every other
  // answer has no argument data, and keeps Fastify's faster default.
  if (result.approval === undefined) return reply.send(payload);
  return sendCanonical(reply, payload as unknown as JsonObject); // all JSON data
}
