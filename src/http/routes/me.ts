// GET /me: who the token says the caller is, and what its roles let it do, so a page can say so
// before it lists anything (an operator who pasted an agent's token is told it cannot decide).
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import type { Identity } from '../../policy/model.js';

const meQuery = { type: 'object', additionalProperties: false, properties: {} } as const;

export function meRoute(app: FastifyInstance, ctx: AppContext): void {
  app.get('/me', { schema: { querystring: meQuery } }, async (request) => {
    const identity = request.identity as Identity;
    const has = (roles: readonly string[]): boolean => roles.some((r) => identity.roles.includes(r));
    return {
      sub: identity.user,
      team: identity.team,
      agent: identity.agent,
      name: identity.name ?? null,
      roles: identity.roles,
      can: { decide: has([ctx.approverRole]), read_policies: has(ctx.policyReaderRoles), reload: has([ctx.adminRole]) },
    };
  });
}
