// POST /decide: the hot path. Strict body → decide() over the current policy set → 200 allow or
// 403 otherwise (SPEC section 1), one decision log line, metrics. With `approval_id` the request is
// decided again from scratch and a matching granted approval is redeemed (src/approvals).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { JsonObject } from '../../json/value.js';
import { decide } from '../../policy/decide.js';
import type { DecisionResult, Identity } from '../../policy/model.js';
import { toDecideRequest, toolCallSchema, type ToolCall } from '../../policy/request.js';
import type { AppContext } from '../app.js';
import { HttpError, sendProblem } from '../errors.js';
import { sendCanonical } from '../reply.js';
import { redactSecrets } from '../redact.js';

export interface DecideBody extends ToolCall { approval_id?: string }

/** /decide also takes the approval to redeem. */
export const decideBodySchema = {
  ...toolCallSchema,
  properties: { ...toolCallSchema.properties, approval_id: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

/** The response body of a decision (SPEC section 5). */
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
    return sendProblem(reply, new HttpError('internal', 'the decision could not be made; nothing was allowed', {
      body: { decision: 'deny', decision_id: decisionId },
    }));
  }
  const body = decisionBody(result, decisionId);
  const payload = extra ? { ...body, ...extra } : body;
  reply.code(result.decision === 'allow' ? 200 : 403);
  // An approval's capability and presentation carry the request's numbers (reply.ts). Every other
  // answer has no argument data, and keeps Fastify's faster default.
  if (result.approval === undefined) return reply.send(payload);
  return sendCanonical(reply, payload as unknown as JsonObject); // all JSON data
}

export function decideRoute(app: FastifyInstance, ctx: AppContext): void {
  app.post('/decide', { schema: { body: decideBodySchema } }, async (request, reply) => {
    const identity = request.identity as Identity;
    const body = request.body as DecideBody;
    const decisionId = randomUUID();
    const req = toDecideRequest(body);
    const started = process.hrtime.bigint();
    const set = ctx.policies.current();
    let result = decide(set, req, identity);
    const durationUs = Number(process.hrtime.bigint() - started) / 1000;
    if (body.approval_id !== undefined) {
      if (ctx.approvals === null) throw new HttpError('unavailable', 'approvals are not configured', { retryAfterSec: 5 });
      // A sub the store cannot hold is the token's 401 (errors.ts), never a 500.
      result = await ctx.approvals.redeem(result, req, body.approval_id, identity);
    }
    ctx.metrics.decisions.inc({ decision: result.decision, rule: result.rule });
    ctx.metrics.decideSeconds.observe(durationUs / 1e6);
    request.log.info({
      decision_id: decisionId,
      tool: req.tool,
      decision: result.decision,
      rule: result.rule,
      policies: set.digests,
      user: identity.user,
      team: identity.team,
      agent: identity.agent,
      duration_us: Math.round(durationUs * 10) / 10,
      ...(body.approval_id !== undefined ? { approval_id: body.approval_id } : {}),
      ...(ctx.logArgs ? { args: redactSecrets(req.args) } : {}),
    }, 'decision');
    return sendDecision(reply, result, decisionId);
  });
}
