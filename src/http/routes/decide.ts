// POST /decide: the hot path. Strict body → decide() over the current policy set → 200 allow or
// 403 otherwise (docs/spec.md section 1), one decision log line, metrics. With `approval_id` the request is
// decided again from scratch and a matching granted approval is redeemed (src/approvals).
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { CitedApproval } from '../../approvals/service.js';
import { decide } from '../../policy/decide.js';
import type { Identity } from '../../policy/model.js';
import { toDecideRequest, toolCallSchema, type ToolCall } from '../../policy/request.js';
import type { AppContext } from '../context.js';
import { sendDecision } from '../decisions.js';
import { HttpError } from '../errors.js';
import { redactSecrets } from '../redact.js';

export interface DecideBody extends ToolCall {
  approval_id?: string;
}

/** /decide also takes the approval to redeem. */
export const decideBodySchema = {
  ...toolCallSchema,
  properties: { ...toolCallSchema.properties, approval_id: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

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
    let cited: CitedApproval | null = null;
    if (body.approval_id !== undefined) {
      if (ctx.approvals === null) throw new HttpError('unavailable', 'approvals are not configured', { retryAfterSec: 5 });
      // A sub the store cannot hold is the token's 401 (errors.ts), never a 500.
      ({ result, cited } = await ctx.approvals.redeem(result, req, body.approval_id, identity));
    }
    ctx.metrics.decisions.inc({ decision: result.decision, rule: result.rule });
    ctx.metrics.decideSeconds.observe(durationUs / 1e6);
    request.log.info(
      {
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
        ...(req.run?.id !== undefined ? { run_id: req.run.id } : {}),
        ...(ctx.logArgs ? { args: redactSecrets(req.args) } : {}),
      },
      'decision',
    );
    return sendDecision(reply, result, decisionId, result.decision === 'require_approval' ? { next: nextStep(cited) } : undefined);
  });
}

/** What a client does to resume a require_approval (docs/spec.md section 5.3, "What to do next"). */
export function nextStep(cited: CitedApproval | null): Record<string, string> {
  if (cited === null) return { action: 'file', url: '/approvals' };
  if (cited.sameRequest && cited.status === 'pending') return { action: 'wait', url: `/approvals/${cited.id}?wait=60`, expires_at: cited.expiresAt };
  // Spent (consumed, expired, cancelled) or asked for another request: it can never redeem this call.
  return { action: 'file_new', url: '/approvals' };
}
