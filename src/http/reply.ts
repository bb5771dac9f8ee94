// How the routes send what the engine answers. A decision: 200 only for allow, 403 otherwise, and an
// internal failure a 500 problem that allows nothing (docs/spec.md section 1). An answer written as
// text (an Idempotency-Key's, new or kept) as it is. Answers whose JSON carries a request's numbers
// are written as canonical JSON, so numbers come out as the request wrote them: Fastify's
// JSON.stringify would write the double instead (12345678901234567000 for 12345678901234567890), and
// an operator or client would read a number the hash does not cover.
import type { FastifyReply } from 'fastify';
import { decisionPayload, decisionStatus, inspectionBody, type Answer } from '../engine/answer.js';
import { canonicalize } from '../json/canonical.js';
import type { JsonObject } from '../json/value.js';
import type { InspectResult } from '../policy/inspect.js';
import type { DecisionResult } from '../policy/model.js';
import { HttpError, sendProblem } from './errors.js';

export function sendCanonical(
  reply: FastifyReply,
  body: JsonObject,
  type = 'application/json; charset=utf-8',
): FastifyReply {
  return reply.type(type).send(canonicalize(body));
}

export function sendAnswer(reply: FastifyReply, answer: Answer): FastifyReply {
  if (answer.kind === 'decision')
    return sendDecision(reply, answer.result, answer.decisionId, answer.extra, answer.exact);
  if (answer.kind === 'inspection') return sendInspection(reply, answer.result, answer.decisionId, answer.next);
  // A kept one says so in `Idempotent-Replayed`.
  if (answer.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(answer.status).type('application/json; charset=utf-8').send(answer.body);
}

/**
 * Send an inspection: 200 only for allow (with the value redacted, if a guard redacted), 403
 * otherwise, an internal failure a 500 problem that withholds the value. Canonical JSON: the value
 * redacted and an approval's hash carry the request's numbers.
 */
function sendInspection(
  reply: FastifyReply,
  result: InspectResult,
  decisionId: string,
  next?: Readonly<Record<string, string>>,
): FastifyReply {
  if (result.internalError) {
    return sendProblem(
      reply,
      new HttpError('internal', 'the inspection could not be made; the value is withheld', {
        body: { decision: 'deny', decision_id: decisionId },
      }),
    );
  }
  reply.code(result.decision === 'allow' ? 200 : 403);
  return sendCanonical(reply, inspectionBody(result, decisionId, next));
}

/**
 * Send a decision: 200 only for allow; an internal failure is a 500 problem that allows nothing.
 * `exact`: `extra` holds numbers as counted (a counter's standing), written as canonical JSON too.
 */
function sendDecision(
  reply: FastifyReply,
  result: DecisionResult,
  decisionId: string,
  extra?: Record<string, unknown>,
  exact = false,
): FastifyReply {
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
  // An approval's capability and presentation carry the request's numbers. Every other answer has no
  // argument data, and keeps Fastify's faster default.
  if (result.approval === undefined && !exact) return reply.send(payload);
  return sendCanonical(reply, payload as unknown as JsonObject); // all JSON data
}
