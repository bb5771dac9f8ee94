// GET /decisions: the decision store (DECISION_STORE=postgres), keyset pages newest first, for
// auditors (AUDITOR_ROLE) and admins (docs/spec.md section 5.9). A record holds the arguments,
// claims and context only when LOG_ARGS was on, redacted as the decision log line is.
import type { FastifyInstance } from 'fastify';
import type { StoredDecision } from '../../engine/index.js';
import { requireRole } from '../auth.js';
import type { AppContext } from '../context.js';
import { HttpError } from '../errors.js';

const DATE_TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{1,9})?(?:Z|[+-]\\d{2}:\\d{2})$';
const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    tool: { type: 'string', minLength: 1, maxLength: 256 },
    decision: { enum: ['allow', 'deny', 'abort', 'require_approval'] },
    user: { type: 'string', minLength: 1, maxLength: 512 },
    stage: { enum: ['args', 'result', 'llm_request', 'llm_response'] },
    since: { type: 'string', pattern: DATE_TIME },
    until: { type: 'string', pattern: DATE_TIME },
    cursor: { type: 'string', maxLength: 512 },
    limit: { type: 'integer', minimum: 1, maximum: 200 },
  },
} as const;

interface ListQuery {
  tool?: string;
  decision?: string;
  user?: string;
  stage?: string;
  since?: string;
  until?: string;
  cursor?: string;
  limit?: number;
}

export function decisionsRoute(app: FastifyInstance, ctx: AppContext): void {
  const roles = [ctx.auditorRole ?? 'auditor', ctx.adminRole];
  app.get('/decisions', { schema: { querystring: listQuery }, onRequest: requireRole(...roles) }, async (request) => {
    if (ctx.engine.parts.records === null)
      throw new HttpError('not_found', 'the decision store is off (DECISION_STORE)');
    const q = request.query as ListQuery;
    const since = instant('since', q.since);
    const until = instant('until', q.until);
    const { items, nextCursor } = await ctx.engine.records({
      limit: q.limit ?? 50,
      ...(q.tool !== undefined ? { tool: q.tool } : {}),
      ...(q.decision !== undefined ? { decision: q.decision } : {}),
      ...(q.user !== undefined ? { user: q.user } : {}),
      ...(q.stage !== undefined ? { stage: q.stage } : {}),
      ...(since !== undefined ? { since } : {}),
      ...(until !== undefined ? { until } : {}),
      ...(q.cursor !== undefined ? { cursor: q.cursor } : {}),
    });
    return { items: items.map(decisionView), next_cursor: nextCursor };
  });
}

function instant(name: string, text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) throw new HttpError('bad_request', `${name}: not a date-time (RFC 3339)`); // 2026-02-30T…
  return at;
}

/** A record as the API shows it: the decision log line's names (docs/operations.md "Logs"). */
export function decisionView(r: StoredDecision): Record<string, unknown> {
  return {
    decision_id: r.id,
    time: r.time,
    tool: r.tool,
    decision: r.decision,
    rule: r.rule,
    ...(r.stage !== undefined ? { stage: r.stage } : {}),
    ...(r.kind !== undefined ? { kind: r.kind } : {}),
    policies: r.digests,
    user: r.identity.user,
    team: r.identity.team,
    agent: r.identity.agent,
    roles: r.identity.roles,
    env: r.env ?? null,
    run_id: r.runId,
    ...(r.approvalId !== undefined ? { approval_id: r.approvalId } : {}),
    ...(r.repeated === true ? { replayed: true } : {}),
    ...(r.args !== undefined ? { args: r.args } : {}),
    ...(r.identity.claims !== undefined ? { claims: r.identity.claims } : {}),
    ...(r.context !== undefined ? { context: r.context } : {}),
    ...(r.run !== undefined ? { run: r.run } : {}),
  };
}
