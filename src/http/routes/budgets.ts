// GET /budgets (any caller): where the caller stands in every budget and rate limit that can apply to
// it (docs/spec.md section 2.9): the limit (its id, maximum, window, scope, what it counts and the
// tools it selects, never who else it selects) and its counter in the current window. ADMIN_ROLE sees
// every limit of the set with the counters of everyone, the fullest first. POST /usage reports spend
// for `max_usd` budgets (./usage.ts). The engine reads them (src/engine/counters.ts).
import type { FastifyInstance } from 'fastify';
import type { Identity } from '../../policy/model.js';
import type { AppContext } from '../context.js';
import { sendCanonical } from '../reply.js';

const query = {
  type: 'object',
  additionalProperties: false,
  // How many counters of each limit an admin sees (the fullest first).
  properties: { limit: { type: 'integer', minimum: 1, maximum: 1000 } },
} as const;

export function budgetsRoute(app: FastifyInstance, ctx: AppContext): void {
  app.get('/budgets', { schema: { querystring: query } }, async (request, reply) => {
    const identity = request.identity as Identity;
    const admin = identity.roles.includes(ctx.adminRole);
    const max = (request.query as { limit?: number }).limit ?? 100;
    return sendCanonical(reply, await ctx.engine.standings(identity, { admin, max }));
  });
}
