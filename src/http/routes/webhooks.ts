// GET /admin/webhooks (ADMIN_ROLE): the endpoints this replica delivers to, how many deliveries are
// pending and failed, and the deliveries of one status (failed by default), newest first
// (docs/spec.md section 5.8). Never a secret, and of a URL only its origin: a Slack webhook URL's
// path is its secret.
import type { FastifyInstance } from 'fastify';
import { DELIVERY_STATUSES, LIMITS, type DeliveryStatus } from '../../engine/index.js';
import { requireRole } from '../auth.js';
import type { AppContext } from '../context.js';
import { HttpError } from '../errors.js';

const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const listQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { enum: DELIVERY_STATUSES },
    limit: { type: 'integer', minimum: 1, maximum: LIMITS.pageSize },
    cursor: { type: 'string', pattern: UUID_PATTERN },
  },
} as const;

export function webhooksRoute(app: FastifyInstance, ctx: AppContext): void {
  app.get(
    '/admin/webhooks',
    { onRequest: requireRole(ctx.adminRole), schema: { querystring: listQuery } },
    async (request) => {
      const webhooks = ctx.webhooks ?? null;
      const approvals = ctx.engine.parts.approvals;
      if (webhooks === null || approvals === null)
        throw new HttpError('unavailable', 'webhooks need the approval database', { retryAfterSec: 5 });
      approvals.ensureReady();
      const q = request.query as { status?: DeliveryStatus; limit?: number; cursor?: string };
      const [counts, page] = await Promise.all([
        webhooks.outbox.counts(),
        webhooks.outbox.list({
          status: q.status ?? 'failed',
          limit: q.limit ?? 50,
          ...(q.cursor !== undefined ? { cursor: q.cursor } : {}),
        }),
      ]);
      const total = (status: 'pending' | 'failed'): number =>
        counts.filter((c) => c.status === status).reduce((n, c) => n + c.count, 0);
      const of = (name: string, status: 'pending' | 'failed'): number =>
        counts.find((c) => c.endpoint === name && c.status === status)?.count ?? 0;
      return {
        endpoints: webhooks.endpoints.map((e) => ({
          name: e.name,
          format: e.format,
          origin: new URL(e.url).origin,
          events: e.events,
          pending: of(e.name, 'pending'),
          failed: of(e.name, 'failed'),
        })),
        pending: total('pending'),
        failed: total('failed'),
        items: page.items,
        next_cursor: page.nextCursor,
      };
    },
  );
}
