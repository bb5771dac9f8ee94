// GET /policies (a policy reader role): what is being served and the last reload failure. POST
// /admin/reload (role admin): load and validate the whole directory, swap atomically, or keep the old
// set and say why.
import type { FastifyInstance } from 'fastify';
import { policyFileName } from '../../policy/load.js';
import type { AppContext } from '../context.js';
import { requireRole } from '../auth.js';
import { HttpError, sendProblem } from '../errors.js';

export function policiesRoute(app: FastifyInstance, ctx: AppContext): void {
  // Which files, rules and tools are served tells a caller what it must stay under: readers only.
  app.get('/policies', { onRequest: requireRole(...ctx.policyReaderRoles) }, async () => policiesBody(ctx));

  app.post('/admin/reload', { onRequest: requireRole(ctx.adminRole) }, async (_request, reply) => {
    const outcome = await ctx.engine.reload();
    if (!outcome.ok) {
      return sendProblem(
        reply,
        new HttpError('reload_failed', 'the policy directory did not load; the previous set keeps serving', {
          body: policiesBody(ctx),
        }),
      );
    }
    return reply.send({ reloaded: true, ...policiesBody(ctx) });
  });
}

function policiesBody(ctx: AppContext): Record<string, unknown> {
  const { policies } = ctx.engine.parts;
  const set = policies.current();
  const failure = policies.lastFailure();
  return {
    env: set.env,
    loaded_at: policies.loadedAt().toISOString(),
    files: set.files.map((f) => ({
      path: policyFileName(policies.dir, f.path),
      policy: f.identity.policy,
      ...(f.identity.version !== undefined ? { version: f.identity.version } : {}),
      digest: f.identity.digest,
      rules: f.rules.length,
      tools: f.tools.length,
      guards: f.guards.length,
    })),
    last_reload_error: failure === null ? null : { at: failure.at.toISOString(), problems: failure.problems },
  };
}
