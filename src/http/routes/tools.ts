// GET /tools (any caller): the catalogue as this caller may use it, each entry with what /decide
// answers for it or `depends` (docs/spec.md section 5.5), for MCP gateways that filter `tools/list`.
// It shows rule ids and statuses only, never a condition, a threshold or who else a rule selects
// (docs/security.md), so it needs no role: an agent learns no more than asking /decide would tell it.
import type { FastifyInstance } from 'fastify';
import { inventory } from '../../policy/inventory.js';
import type { Identity } from '../../policy/model.js';
import type { AppContext } from '../context.js';

export function toolsRoute(app: FastifyInstance, ctx: AppContext): void {
  app.get('/tools', async (request) => inventory(ctx.engine.parts.policies.current(), request.identity as Identity));
}
