// How a decision is answered, the same way by every route that decides: /decide, /explain and the
// refusals of POST /approvals.
import type { FastifyReply } from 'fastify';
import type { StoredAnswer } from '../approvals/idempotency.js';
import { canonicalize } from '../json/canonical.js';
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

/**
 * Send a decision: 200 only for allow; an internal failure is a 500 problem that allows nothing.
 * `exact`: `extra` holds numbers as counted (a counter's standing), written as canonical JSON too.
 */
export function sendDecision(reply: FastifyReply, result: DecisionResult, decisionId: string, extra?: Record<string, unknown>, exact = false): FastifyReply {
  if (result.internalError) {
    return sendProblem(
      reply,
      new HttpError('internal', 'the decision could not be made; nothing was allowed', {
        body: { decision: 'deny', decision_id: decisionId },
      }),
    );
  }
  const payload = decisionPayload(result, decisionId, extra);
  reply.code(decisionStatus(result));
  // An approval's capability and presentation carry the request's numbers (reply.ts). Every other
  // answer has no argument data, and keeps Fastify's faster default.
  if (result.approval === undefined && !exact) return reply.send(payload);
  return sendCanonical(reply, payload as unknown as JsonObject); // all JSON data
}

/** A decision as the text sendDecision sends, for an Idempotency-Key to keep (not for an internal failure). */
export function decisionAnswer(result: DecisionResult, decisionId: string, extra?: Record<string, unknown>): StoredAnswer {
  const payload = decisionPayload(result, decisionId, extra);
  const body = result.approval === undefined ? JSON.stringify(payload) : canonicalize(payload as unknown as JsonObject); // all JSON data
  return { status: decisionStatus(result), body };
}

function decisionPayload(result: DecisionResult, decisionId: string, extra: Record<string, unknown> | undefined): Record<string, unknown> {
  const body = decisionBody(result, decisionId);
  return extra ? { ...body, ...extra } : body;
}

function decisionStatus(result: DecisionResult): number {
  return result.decision === 'allow' ? 200 : 403;
}
