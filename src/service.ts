// The service process (`gatehouse serve`): configuration, logger, policies, database (embedded by
// default), the app, listen, signals. The only module with process side effects but the entry point.
import { writeSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { isatty } from 'node:tty';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { compose } from './compose.js';
import { ConfigError, DEFAULT_JWT_MAX_LIFETIME_SEC, loadConfig, servedPolicyEnv, type Config } from './config.js';
import { createSql } from './db/connect.js';
import { unavailableFrom } from './db/errors.js';
import { migrate } from './db/migrate.js';
import { developmentSecret, developmentSecretFile } from './dev-secret.js';
import type { Engine } from './engine/index.js';
import { buildApp } from './http/app.js';
import type { AuthOptions } from './http/auth.js';
import type { SignInSettings } from './http/session.js';
import { createJwksKeys, type JwksKeys } from './http/jwks.js';
import { createLogger, LogSink } from './log.js';
import { formatProblem, PolicyLoadError } from './policy/errors.js';
import { createLivePolicies, type LivePolicies } from './policy/live.js';
import { createSessionStore } from './sessions/store.js';

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

/**
 * Runs the service until a signal stops it, and resolves with the exit code: 0 after a clean stop
 * (also when the signal came during start-up), 1 when something could not be closed, 2 when it could
 * not start (a configuration that cannot serve refuses to start: docs/spec.md section 6).
 */
export async function serve(env: Readonly<Record<string, string | undefined>>): Promise<number> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return refuse(err.message);
    throw err;
  }
  const logSink = new LogSink(1);
  // Readable lines for a person at a terminal, JSON lines for anything reading a pipe or a file.
  // isatty(1), not process.stdout: the log writes to descriptor 1 itself (log.ts), and creating
  // Node's stdout stream would put a pipe there in non-blocking mode (libuv), changing how those
  // writes behave when the reader is slow.
  const stdoutIsTerminal = isatty(1);
  const logger = createLogger(config.logLevel, logSink, {
    format: config.logFormat ?? (stdoutIsTerminal ? 'pretty' : 'json'),
    colorize: stdoutIsTerminal && env.NO_COLOR === undefined,
  });
  process.once('exit', () => logSink.flush()); // lines that waited for a stuck reader, if any
  const policyEnv = servedPolicyEnv(config.policyEnv, config.production);
  let policies: LivePolicies;
  try {
    policies = await createLivePolicies(config.policyDir, policyEnv);
  } catch (err) {
    if (err instanceof PolicyLoadError)
      return refuse(`policies in ${config.policyDir} did not load:\n${err.problems.map(formatProblem).join('\n')}`);
    throw err;
  }
  let shadow: LivePolicies | null = null;
  if (config.shadowPolicyDir !== null) {
    try {
      shadow = await createLivePolicies(config.shadowPolicyDir, policyEnv);
    } catch (err) {
      if (err instanceof PolicyLoadError) {
        return refuse(
          `shadow policies in ${config.shadowPolicyDir} did not load:\n${err.problems.map(formatProblem).join('\n')}`,
        );
      }
      throw err;
    }
    logger.info({ shadow_policies: shadow.current().identities }, 'shadow policies decide beside the serving set');
  }
  if (
    config.policyEnv === null &&
    policyEnv !== null &&
    policies.current().files.some((f) => f.environments.length > 0)
  ) {
    logger.warn(
      { env: policyEnv },
      `POLICY_ENV is not set: serving the "${policyEnv}" environment of the policies (the development default; with NODE_ENV=production Gatehouse refuses to start without it)`,
    );
  }

  const { jwt } = config;
  if (
    jwt.allowUnbound &&
    (jwt.publicKey !== null || jwt.jwksUrl !== null) &&
    (jwt.audience === null || jwt.issuer === null)
  ) {
    logger.warn(
      'JWT_ALLOW_UNBOUND=true: without JWT_AUDIENCE and JWT_ISSUER, a token the identity provider minted for another application is accepted here, roles included',
    );
  }
  if (config.webhooks.endpoints.length > 0 && config.publicUrl === null) {
    logger.warn(
      'WEBHOOKS without PUBLIC_URL: the links in webhook events are paths (/ui#approval=…), not addresses a receiver can open',
    );
  }
  const generatedKey = config.jwt.secret === null && config.jwt.publicKey === null && config.jwt.jwksUrl === null;
  let key: string | null;
  try {
    key = config.jwt.secret ?? config.jwt.publicKey ?? (generatedKey ? await developmentSecret(config.dataDir) : null);
  } catch (err) {
    // An unwritable DATA_DIR: a start that cannot serve, like any other (exit 2).
    return refuse(
      `cannot serve: the development JWT secret cannot be kept under ${config.dataDir}: ${(err as Error).message}`,
    );
  }

  // Sign-in (OIDC_ISSUER): loadConfig has checked PUBLIC_URL, and SESSION_SECRET in production.
  let signinSettings: SignInSettings | null = null;
  if (config.oidc !== null && config.publicUrl !== null) {
    let sessionSecret: string;
    try {
      sessionSecret = config.session.secret ?? (await developmentSecret(config.dataDir, 'dev-session-secret'));
    } catch (err) {
      return refuse(
        `cannot serve: the development session secret cannot be kept under ${config.dataDir}: ${(err as Error).message}`,
      );
    }
    signinSettings = {
      oidc: config.oidc,
      publicUrl: config.publicUrl,
      sessionSecret,
      sessionTtlMs: config.session.ttlMs,
      claims: { ...config.claims, roles: config.oidc.rolesClaim },
    };
  }

  // From here on the process holds things that outlive a failed start if nobody closes them (the
  // embedded PostgreSQL, the pool, the LISTEN connection, timers, the server). Each is pushed on
  // `opened` as soon as it exists, and one path closes them, last opened first: the shutdown, a start
  // that fails half-way, or a signal that arrives during start-up. The signal handlers are in place
  // before the first of them is opened, so no signal kills Node and orphans the embedded server.
  const opened = createCloseStack(logger);
  let phase: 'starting' | 'serving' | 'stopping' = 'starting';
  let graceTimer: NodeJS.Timeout | undefined;
  let served: Engine | null = null;
  let reloadPending = false;
  let stopped!: (code: number) => void;
  const whenStopped = new Promise<number>((resolve) => (stopped = resolve));

  // process.exit still stops the embedded server: its `exit` handler sends it SIGINT (embedded.ts).
  const exitNow = (why: string): void => {
    logger.error(why);
    logger.flush();
    process.exit(1);
  };
  const onStopSignal = (signal: NodeJS.Signals): void => {
    if (phase === 'stopping') {
      // A hang-up comes more than once (the shell passes it to its jobs, the kernel again as the shell
      // exits): only a person's second SIGTERM or SIGINT cuts the shutdown short.
      if (signal !== 'SIGHUP') exitNow(`${signal} again while shutting down; exiting now`);
      return;
    }
    const wasServing = phase === 'serving';
    phase = 'stopping';
    logger.info(
      { signal },
      wasServing ? 'shutting down: finishing in-flight requests' : 'shutting down: interrupting the start-up',
    );
    graceTimer = setTimeout(() => exitNow('shutdown grace period exceeded; exiting'), config.shutdownGraceMs);
    graceTimer.unref();
    // During start-up the start notices at its next step (checkpoint) and closes what it opened.
    if (wasServing) void closeAll().then(stopped);
  };
  const onReloadSignal = (): void => {
    if (phase === 'serving' && served !== null) void served.reload();
    else reloadPending = true; // the files may have changed since they were loaded: reload once serving
  };
  const closeAll = async (): Promise<number> => {
    const ok = await opened.closeAll();
    clearTimeout(graceTimer);
    for (const signal of STOP_SIGNALS) process.off(signal, onStopSignal);
    if (RELOAD_SIGNAL !== null) process.off(RELOAD_SIGNAL, onReloadSignal);
    return ok ? 0 : 1;
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onStopSignal);
  if (RELOAD_SIGNAL !== null) process.on(RELOAD_SIGNAL, onReloadSignal);
  const checkpoint = (): void => {
    if (phase === 'stopping') throw new StartInterrupted();
  };

  const start = async (): Promise<FastifyInstance> => {
    // The JWKS is fetched while the database starts; until a fetch succeeds tokens answer 503, /readyz
    // says not_ready, and the fetch is retried in the background.
    let jwks: JwksKeys | null = null;
    let jwksFirstFetch: Promise<boolean> = Promise.resolve(true);
    if (config.jwt.jwksUrl !== null) {
      const keys = createJwksKeys({ url: config.jwt.jwksUrl, refreshMs: config.jwt.jwksRefreshMs, log: logger });
      jwks = keys;
      opened.push('the JWKS refresh', async () => keys.close());
      jwksFirstFetch = keys.start();
    }
    let url = config.databaseUrl;
    if (url === null) {
      // Loaded only here: its binaries are an optional dependency, absent from production images.
      const { startEmbeddedPostgres } = await import('./db/embedded.js');
      const embedded = await startEmbeddedPostgres({ dataDir: join(config.dataDir, 'pg') });
      opened.push('the embedded PostgreSQL', () => embedded.stop());
      url = embedded.url;
      if (embedded.stoppedOrphan !== null) {
        logger.warn(
          { pid: embedded.stoppedOrphan, dataDir: embedded.dataDir },
          'stopped the embedded PostgreSQL that a Gatehouse which is no longer running left behind (it was killed, or crashed)',
        );
      }
      logger.info({ dataDir: embedded.dataDir }, 'started the embedded PostgreSQL (set DATABASE_URL to use your own)');
      checkpoint();
    }
    const sql = createSql(url, { max: config.dbPoolMax });
    opened.push('the database pool', () => sql.end({ timeout: 5 }));
    // Migrations run before serving. A database that cannot be reached does not stop /decide, which
    // needs none: approval routes answer 503 and the migrations are retried until they apply. A
    // migration that is wrong (a gap, an edited file) is a deployment error: refuse to start.
    let migrated = false;
    const runMigrations = async (): Promise<void> => {
      const { applied } = await migrate(sql, MIGRATIONS);
      migrated = true;
      if (applied.length > 0) logger.info({ applied }, 'applied database migrations');
    };
    try {
      await runMigrations();
    } catch (err) {
      const unavailable = unavailableFrom(err);
      if (unavailable === null)
        throw new Error(`the database is not usable: ${(err as Error).message}`, { cause: err });
      logger.error(
        { code: unavailable.sourceCode },
        'the database is unreachable: serving /decide; approvals answer 503 until it is back',
      );
      let running = false;
      const migrationRetry = setInterval(() => {
        if (running || migrated) return;
        running = true;
        runMigrations()
          .then(() => {
            clearInterval(migrationRetry);
            logger.info('the database is reachable again: approvals are available');
          })
          .catch(() => undefined)
          .finally(() => (running = false));
      }, 2000);
      migrationRetry.unref();
      opened.push('the migration retry', async () => clearInterval(migrationRetry));
    }
    checkpoint();
    const {
      engine,
      ctx: appCtx,
      closeDuringDrain,
      recordsReady,
    } = compose({
      config,
      logger,
      policies,
      shadow,
      url,
      sql,
      migrated: () => migrated,
      logLinesDropped: () => logSink.dropped,
      opened,
    });
    served = engine;
    if (migrated) await recordsReady();
    checkpoint();
    const checks = {
      issuer: config.jwt.issuer,
      audience: config.jwt.audience,
      clockToleranceSec: config.jwt.clockToleranceSec,
      maxLifetimeSec: config.jwt.maxLifetimeSec,
      claims: config.claims,
    };
    let auth: AuthOptions;
    if (jwks !== null) auth = { ...checks, jwks };
    else if (key !== null) auth = { ...checks, key, algorithm: config.jwt.algorithm ?? 'HS256' };
    else throw new Error('no JWT key is configured'); // loadConfig rules this out: a key, a JWKS URL or a generated secret
    const signin =
      signinSettings === null
        ? {}
        : {
            signin: {
              settings: signinSettings,
              store: createSessionStore(sql, {
                ttlMs: signinSettings.sessionTtlMs,
                deadlineMs: config.dbDeadlineMs,
                schemaReady: () => migrated,
              }),
            },
          };
    const app = await buildApp(appCtx, {
      bodyLimit: config.bodyLimit,
      connections: config.connections,
      logger,
      auth,
      ...signin,
    });
    // app.close() stops accepting and waits for the requests in flight (app.ts: drain). Closing the
    // approvals meanwhile makes long-polls (GET /approvals/{id}?wait=N) answer now with the approval
    // as it is, instead of holding the shutdown for up to 60 s. The webhook worker stops claiming
    // at the same time and records the attempts in flight; what it leaves pending stays queued.
    opened.push('the HTTP server', () => Promise.all([app.close(), closeDuringDrain()]));
    checkpoint();
    // Bounded by the fetch timeout; it was started before the database.
    if (!(await jwksFirstFetch))
      logger.error(
        { url: config.jwt.jwksUrl },
        'the JWKS is not loaded: serving; tokens answer 503 and /readyz is not ready until it is',
      );
    checkpoint();
    await app.listen({ port: config.port, host: config.host });
    checkpoint();
    return app;
  };

  let app: FastifyInstance;
  try {
    app = await start();
  } catch (err) {
    const code = await closeAll();
    if (!(err instanceof StartInterrupted))
      return refuse(`cannot serve: ${err instanceof Error ? err.message : String(err)}`);
    logger.info('stopped');
    logger.flush();
    return code;
  }
  phase = 'serving';
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info({ url: base, env: policyEnv, policies: policies.current().identities }, 'gatehouse is serving');
  printBanner(base, generatedKey ? developmentTokens(app.jwt.sign.bind(app.jwt), config) : null, config);
  if (reloadPending) onReloadSignal();

  const code = await whenStopped;
  logger.info('stopped');
  logger.flush();
  return code;
}

// SIGHUP is a hang-up: the terminal that started a foreground `npm start` closed. Nothing is left to
// serve it, and a process that stayed would keep the port and DATA_DIR from the next start, so it
// stops like SIGTERM. The daemon habit of reloading on SIGHUP (nginx, Vault) assumes a process no
// terminal can hang up; one rule for every way Gatehouse runs is simpler to know, so reloading has a
// signal of its own, SIGUSR2 (HAProxy's reload signal; SIGUSR1 starts Node's inspector). Windows has
// no SIGUSR2: there POST /admin/reload reloads. docs/operations.md "Signals".
const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];
const RELOAD_SIGNAL: NodeJS.Signals | null = process.platform === 'win32' ? null : 'SIGUSR2';

/** Thrown at a start-up step when a stop signal arrived meanwhile. */
class StartInterrupted extends Error {}

/** How to close what the process opened, closed last opened first. */
function createCloseStack(logger: Logger): {
  push(what: string, close: () => Promise<unknown>): void;
  closeAll(): Promise<boolean>;
} {
  const steps: { what: string; close: () => Promise<unknown> }[] = [];
  return {
    push(what, close) {
      steps.push({ what, close });
    },
    /** Closes each step once, going on past one that fails; false if any failed. */
    async closeAll() {
      let ok = true;
      for (let step = steps.pop(); step !== undefined; step = steps.pop()) {
        try {
          await step.close();
        } catch (err) {
          ok = false;
          logger.error({ err }, `error while shutting down: closing ${step.what}`);
        }
      }
      return ok;
    },
  };
}

function refuse(message: string): number {
  process.stderr.write(`gatehouse: ${message}\n`);
  return 2;
}

type Sign = (payload: object, options: { expiresIn: number }) => string;

interface DevelopmentTokens {
  readonly agent: string;
  readonly approver: string;
  /** How long they live, in words. */
  readonly lifetime: string;
}

/** The two tokens of the development banner: an agent of team support that may report its spend, and an operator who may approve. */
function developmentTokens(sign: Sign, config: Config): DevelopmentTokens {
  // JWT_MAX_LIFETIME's default (24 hours), or less when JWT_MAX_LIFETIME says so (a longer token would be refused).
  const lifetimeSec = Math.min(DEFAULT_JWT_MAX_LIFETIME_SEC, config.jwt.maxLifetimeSec);
  const agent = sign(
    // The agent reports its own spend (POST /usage), as a runtime does.
    {
      sub: 'dev-agent',
      [config.claims.team]: 'support',
      [config.claims.agent]: 'support-bot',
      [config.claims.roles]: [config.usage.role],
    },
    { expiresIn: lifetimeSec },
  );
  const approver = sign(
    {
      sub: 'dev-operator',
      [config.claims.team]: 'support',
      [config.claims.roles]: [config.approverRole, config.adminRole],
    },
    { expiresIn: lifetimeSec },
  );
  const lifetime =
    lifetimeSec % 3600 === 0
      ? `${lifetimeSec / 3600} hour${lifetimeSec === 3600 ? '' : 's'}`
      : `${lifetimeSec} seconds`;
  return { agent, approver, lifetime };
}

/**
 * What is up, on stderr: stdout carries the log, the decision log included, which a pipe or a
 * collector reads line by line. The PID is this process's: under `npm start` npm (and its shell)
 * are parents, and a `kill -USR2` sent to npm's PID does not reach the server.
 */
/**
 * This package's command by its path (`node dist/main.js` in a checkout): never a bare package name,
 * which npx would fetch from the registry, where `gatehouse` is another project's package.
 */
function ownCommand(): string {
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  const rel = relative(process.cwd(), main);
  return `node ${rel.startsWith('..') || isAbsolute(rel) ? main : rel}`;
}

function printBanner(base: string, tokens: DevelopmentTokens | null, config: Config): void {
  const pid = process.pid;
  let text = `
Gatehouse is serving at ${base}
  approval page    ${base}/ui${config.oidc !== null ? ` (sign-in: ${config.publicUrl}/auth/login)` : ''}
  API (OpenAPI)    ${base}/openapi.yaml
  health           ${base}/healthz, ${base}/readyz
  process          PID ${pid}: kill -USR2 ${pid} reloads the policies, kill ${pid} stops the service
                   (this process's PID; under npm start, npm is its parent and has another)
`;
  if (tokens !== null) {
    text += `
Development mode: no JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL, so a secret was generated (kept in ${developmentSecretFile(config.dataDir)}).
Tokens valid for ${tokens.lifetime}:

  export GATEHOUSE=${base}
  export AGENT_TOKEN=${tokens.agent}
  export APPROVER_TOKEN=${tokens.approver}

Try it:

  curl -s $GATEHOUSE/decide -H "authorization: Bearer $AGENT_TOKEN" -H 'content-type: application/json' \\
    -d '{"tool":"refund","args":{"order":"A1","amount":120}}'

Tokens for other teams, agents and approvers: ${ownCommand()} token --help
`;
  }
  // Written to descriptor 2 itself, like the log to 1: Node's stderr stream would put a pipe there
  // in non-blocking mode, and when stdout and stderr are one pipe or socket (2>&1, journald) that
  // would change how the log's writes behave too. Best effort: the banner only informs.
  try {
    writeSync(2, `${text}\n`);
  } catch {
    // a stderr that is closed or full: nothing to tell, nobody to tell it to
  }
}
