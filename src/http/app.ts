// The application: a Fastify instance with strict bodies, JWT identity and the routes, built from
// its dependencies so tests drive it with inject() and src/service.ts owns the process around it.
import { fastifyCookie } from '@fastify/cookie';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { ConnectionLimits } from '../config.js';
import type { SessionStore } from '../engine/index.js';
import { createAuthenticator, registerAuth, type AuthOptions } from './auth.js';
import { registerStrictBodies } from './body.js';
import { registerDrain, registerExpectRefusal, registerFirstHeadersDeadline } from './connections.js';
import type { AppContext } from './context.js';
import { answerClientError, registerErrorHandling, sendProblem, toHttpError } from './errors.js';
import { registerResponseHeaders } from './headers.js';
import { createRelyingParty } from './oidc.js';
import { authConfigRoute, authRoutes } from './routes/auth.js';
import { approvalStatsRoute } from './routes/approval-stats.js';
import { approvalRoutes } from './routes/approvals.js';
import { budgetsRoute } from './routes/budgets.js';
import { decideRoute } from './routes/decide.js';
import { inspectRoute } from './routes/inspect.js';
import { decisionsRoute } from './routes/decisions.js';
import { explainRoute } from './routes/explain.js';
import { meRoute } from './routes/me.js';
import { opsRoutes } from './routes/ops.js';
import { policiesRoute } from './routes/policies.js';
import { toolsRoute } from './routes/tools.js';
import { uiRoutes } from './routes/ui.js';
import { usageRoute } from './routes/usage.js';
import { webhooksRoute } from './routes/webhooks.js';
import {
  createSessionAuthenticator,
  sessionCookies,
  type SessionAuthenticator,
  type SignInSettings,
} from './session.js';

export interface AppOptions {
  readonly bodyLimit: number;
  readonly auth: AuthOptions;
  /** Timeouts and the connection cap (docs/operations.md "Connections and load balancers"). */
  readonly connections: ConnectionLimits;
  /** The process logger; omitted in tests that do not look at logs. */
  readonly logger?: Logger;
  /** Sign-in for people with the identity provider (OIDC_ISSUER); omitted: bearer tokens only. */
  readonly signin?: { readonly settings: SignInSettings; readonly store: SessionStore };
}

/** How often Node looks for connections past their headers or request timeout. */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1000;

export async function buildApp(ctx: AppContext, options: AppOptions): Promise<FastifyInstance> {
  const limits = options.connections;
  const app = Fastify({
    ...(options.logger ? { loggerInstance: options.logger } : { logger: false }),
    bodyLimit: options.bodyLimit,
    // One decision line per /decide instead of two lines per request; errors are logged by the handler.
    logController: new LogController({ disableRequestLogging: true }),
    // Our own drain answer below instead (Fastify's is plain JSON without Retry-After).
    return503OnClosing: false,
    // Node's requestTimeout ends when the request has arrived: a long-poll's 60 s answer is not counted.
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    trustProxy: false,
    routerOptions: { maxParamLength: 128 },
    // Router errors (a malformed escape, an over-long id) become problem+json like every other error.
    frameworkErrors: (error, _request, reply) => {
      sendProblem(reply, toHttpError(error));
    },
    // Requests Node's HTTP parser refuses (two Content-Lengths, a cut body) get problem+json too.
    clientErrorHandler: answerClientError,
    http: {
      // Node's own answer to a missing Host is a bare 400: registerDrain's hook answers it instead.
      requireHostHeader: false,
      // Node checks both timeouts only every connectionsCheckingInterval (30 s by default): a
      // slow client could take that much longer. (requestTimeout repeated: Node checks the pair here.)
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    },
  }) as unknown as FastifyInstance; // the logger generic differs between the two branches above
  // Past it Node closes each new connection as soon as it is accepted (net.Server maxConnections).
  app.server.maxConnections = limits.maxConnections;

  registerErrorHandling(app);
  registerResponseHeaders(app); // first: every early answer below carries them too
  const connections = registerDrain(app);
  registerFirstHeadersDeadline(app, connections, limits.headersTimeoutMs);
  registerExpectRefusal(app);
  registerStrictBodies(app, options.bodyLimit);
  await registerAuth(app, options.auth);

  opsRoutes(app, ctx);
  uiRoutes(app);
  const authenticate = createAuthenticator(app, options.auth);
  let sessions: SessionAuthenticator | null = null;
  const signin = options.signin;
  authConfigRoute(app, signin?.settings.publicUrl ?? null);
  if (signin !== undefined) {
    const { settings, store } = signin;
    const cookies = sessionCookies(settings.publicUrl, settings.sessionTtlMs);
    const relyingParty = createRelyingParty({
      oidc: settings.oidc,
      redirectUri: `${settings.publicUrl}/auth/callback`,
      postLogoutRedirectUri: `${settings.publicUrl}/ui`,
      log: ctx.engine.parts.log,
    });
    await app.register(async (auth) => authRoutes(auth, ctx, { settings, cookies, store, relyingParty }));
    // @fastify/cookie's parser (loaded when the /auth scope registered the plugin): the operator
    // routes read one cookie, without the plugin's hooks on every route of the app.
    sessions = createSessionAuthenticator(store, cookies, (header) => fastifyCookie.parse(header));
  }
  await app.register(async (secured) => {
    // Every route in here needs a verified bearer token (docs/spec.md section 5), or, for the routes
    // of the operator page (session.ts SESSION_ROUTES), a signed-in session instead.
    // Callback style: no promise and no microtask turn per request. Only a token checked against a
    // JWKS for the first time is a promise (auth.ts), and a session (a database read).
    secured.addHook('onRequest', (request, _reply, done) => {
      let identity: ReturnType<typeof authenticate>;
      try {
        identity = sessions?.applies(request) ? sessions.authenticate(request) : authenticate(request);
      } catch (err) {
        done(err as Error);
        return;
      }
      if (identity instanceof Promise) identity.then(() => done(), done);
      else done();
    });
    decideRoute(secured, ctx);
    inspectRoute(secured, ctx);
    explainRoute(secured, ctx);
    policiesRoute(secured, ctx);
    toolsRoute(secured, ctx);
    approvalStatsRoute(secured, ctx);
    decisionsRoute(secured, ctx);
    approvalRoutes(secured, ctx);
    budgetsRoute(secured, ctx);
    usageRoute(secured, ctx);
    webhooksRoute(secured, ctx);
    meRoute(secured, ctx);
  });
  return app;
}
