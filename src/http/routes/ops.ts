// Unauthenticated operational routes: where to start (GET /), liveness, readiness, Prometheus
// metrics, the OpenAPI document.
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';

const OPENAPI = readFileSync(new URL('../../../openapi.yaml', import.meta.url));

/**
 * GET /: a person who opens the service's address in a browser, or a client that probes it, learns
 * where things are instead of a 404. The same for everyone (no identity, no configuration shown).
 */
const INDEX = Object.freeze({
  service: 'gatehouse',
  description:
    'Policy decision service for AI agents: POST /decide with a tool call and a bearer JWT answers allow, deny, abort or require_approval.',
  links: Object.freeze({
    ui: '/ui',
    openapi: '/openapi.yaml',
    health: '/healthz',
    ready: '/readyz',
    metrics: '/metrics',
  }),
  docs: 'README.md and docs/ (spec.md, cli.md) in the Gatehouse repository',
});

export function opsRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/', async () => INDEX);

  app.get('/healthz', async () => ({ status: 'ok' }));

  // Ready when policies are loaded (they are, or the process would not have started), the token
  // signing keys are (a JWKS before its first good fetch is not: every token answers 503) and the
  // approval database answers. /decide without approval_id keeps working without the database.
  app.get('/readyz', async (_request, reply) => {
    const { approvals, policies: live } = ctx.engine.parts;
    const database = approvals === null ? 'not_configured' : (await approvals.ping()) ? 'ok' : 'unavailable';
    const jwtKeys = app.jwtKeysLoaded() ? 'ok' : 'not_loaded';
    const ready = database === 'ok' && jwtKeys === 'ok';
    const policies = { status: 'ok', files: live.current().files.length, reload_error: live.lastFailure() !== null };
    return reply
      .code(ready ? 200 : 503)
      .send({ status: ready ? 'ready' : 'not_ready', policies, database, jwt_keys: jwtKeys });
  });

  app.get('/metrics', async (_request, reply) => {
    const { registry } = ctx.engine.parts.metrics;
    return reply.type(registry.contentType).send(await registry.metrics());
  });

  app.get('/openapi.yaml', async (_request, reply) => reply.type('application/yaml').send(OPENAPI));
}
