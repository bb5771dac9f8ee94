// GET /approvals/stats?since=: per rule and kind, how the approvals filed since then ended and how
// fast people decided (docs/spec.md section 5.4.1), for approvers and admins (the operator page).
import type { FastifyInstance } from 'fastify';
import { requireRole } from '../auth.js';
import type { AppContext } from '../context.js';
import { HttpError } from '../errors.js';

const DEFAULT_WINDOW_MS = 7 * 86_400_000;
// An RFC 3339 date-time (section 5.6), as every timestamp of the API is written.
const DATE_TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{1,9})?(?:Z|[+-]\\d{2}:\\d{2})$';
const statsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { since: { type: 'string', pattern: DATE_TIME } },
} as const;

export function approvalStatsRoute(app: FastifyInstance, ctx: AppContext): void {
  app.get(
    '/approvals/stats',
    { schema: { querystring: statsQuery }, onRequest: requireRole(ctx.approverRole, ctx.adminRole) },
    async (request) => {
      const approvals = ctx.engine.approvals();
      const { since } = request.query as { since?: string };
      const from = since === undefined ? new Date(Date.now() - DEFAULT_WINDOW_MS) : new Date(since);
      if (Number.isNaN(from.getTime())) throw new HttpError('bad_request', 'since: not a date-time (RFC 3339)'); // 2026-02-30T…
      const fastGrantSeconds = ctx.fastGrantSeconds ?? 5;
      const rules = await approvals.store.stats(from, fastGrantSeconds);
      return { since: from.toISOString(), fast_grant_seconds: fastGrantSeconds, rules };
    },
  );
}
