// The application: a Fastify instance with strict bodies, JWT identity and the routes, built from
// its dependencies so tests drive it with inject() and main.ts owns the process around it.
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ApprovalService } from '../approvals/service.js';
import type { LivePolicies } from '../policy/live.js';
import { approvalRoutes } from '../approvals/routes.js';
import { createAuthenticator, registerAuth, type AuthOptions } from './auth.js';
import { registerStrictBodies } from './body.js';
import { HttpError, answerClientError, registerErrorHandling, sendProblem, toHttpError } from './errors.js';
import type { Metrics } from './metrics.js';
import { decideRoute } from './routes/decide.js';
import { explainRoute } from './routes/explain.js';
import { opsRoutes } from './routes/ops.js';
import { policiesRoute } from './routes/policies.js';
import { uiRoutes } from './routes/ui.js';

/** What the routes need, shared by all of them. */
export interface AppContext {
  readonly policies: LivePolicies;
  readonly metrics: Metrics;
  /** null when no database is configured: approval routes then answer 503. */
  readonly approvals: ApprovalService | null;
  readonly log: Logger;
  readonly logArgs: boolean;
  readonly adminRole: string;
  readonly approverRole: string;
}

export interface AppOptions {
  readonly bodyLimit: number;
  readonly auth: AuthOptions;
  /** The process logger; omitted in tests that do not look at logs. */
  readonly logger?: Logger;
}

export async function buildApp(ctx: AppContext, options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    bodyLimit: options.bodyLimit,
    // One decision line per /decide instead of two lines per request; errors are logged by the handler.
    logController: new LogController({ disableRequestLogging: true }),
    // Our own drain answer below instead (Fastify's is plain JSON without Retry-After).
    return503OnClosing: false,
    requestTimeout: 70_000, // above the longest approval long-poll (60 s)
    keepAliveTimeout: 72_000,
    trustProxy: false,
    routerOptions: { maxParamLength: 128 },
    // Router errors (a malformed escape, an over-long id) become problem+json like every other error.
    frameworkErrors: (error, _request, reply) => {
      sendProblem(reply, toHttpError(error));
    },
    // Requests Node's HTTP parser refuses (two Content-Lengths, a cut body) get problem+json too.
    clientErrorHandler: answerClientError,
  }) as unknown as FastifyInstance; // the logger generic differs between the two branches above

  registerErrorHandling(app);
  registerDrain(app);
  registerStrictBodies(app, options.bodyLimit);
  await registerAuth(app, options.auth);

  opsRoutes(app, ctx);
  uiRoutes(app);
  const authenticate = createAuthenticator(app, options.auth);
  await app.register(async (secured) => {
    // Every route in here needs a verified bearer token (SPEC section 5).
    // Callback style: no promise and no microtask turn per request.
    secured.addHook('onRequest', (request, _reply, done) => {
      try {
        authenticate(request);
      } catch (err) {
        done(err as Error);
        return;
      }
      done();
    });
    decideRoute(secured, ctx);
    explainRoute(secured, ctx);
    policiesRoute(secured, ctx);
    approvalRoutes(secured, ctx);
  });
  return app;
}

/**
 * Once app.close() has begun, a request that still arrives (on a keep-alive connection that was busy
 * when closing began: only idle ones are closed) is answered 503 problem+json with Retry-After and
 * `Connection: close`, before authentication or any route runs: a client retries elsewhere, and
 * nothing is decided by a process on its way out.
 */
function registerDrain(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) {
      done();
      return;
    }
    reply.header('connection', 'close');
    sendProblem(reply, new HttpError('unavailable', 'the service is shutting down; retry', { retryAfterSec: 1 }));
  });
}
