// @ts-check
// Gatehouse as src/service.ts builds it, minus the parts /decide does not need: the decision log at info
// level on stdout through src/log.ts (synchronous, as src/service.ts), prom-client default metrics on, the
// example policies, HS256. With BENCH_DATABASE_URL the approval store and the budget counters are
// wired in too (the approvals and budgets benchmarks).
// Run as a child process by the benchmarks: it reports {port, timings} over IPC when listening, and
// closes on SIGTERM (flushing the log), like src/service.ts.
//
// Env: BENCH_PORT (default 0: any), BENCH_LOG_DEST (sync | async), BENCH_POLICY_DIR (default ./policies), BENCH_POLICY_ENV (prod),
//      BENCH_LOG_LEVEL (info), BENCH_SHADOW_POLICY_DIR (unset: off), BENCH_DATABASE_URL (unset: no database), BENCH_DB_POOL_MAX, BENCH_BUDGET_CONNECTIONS,
//      BENCH_DECISION_STORE_URL (unset: off; DECISION_STORE=postgres on that database), BENCH_LOG_ARGS (true: LOG_ARGS), BENCH_SECRET, BENCH_MAX_CONNECTIONS, BENCH_MAX_WAITS,
//      BENCH_BODY_LIMIT (BODY_LIMIT; default 1 MiB).
import { performance } from 'node:perf_hooks';
const tImported0 = performance.now();
const { default: pino } = await import('pino');
const { buildApp } = await import('../../dist/http/app.js');
const { createLogger } = await import('../../dist/log.js');
const { createMetrics } = await import('../../dist/engine/metrics.js');
const { createEngine } = await import('../../dist/engine/index.js');
const { createLivePolicies } = await import('../../dist/policy/live.js');
const { loadConfig } = await import('../../dist/config.js');
const { SECRET } = await import('./bodies.mjs');
const tImported = performance.now();

const env = process.env;
// BENCH_LOG_DEST=async: pino.destination with sync: false (pino's own default for stdout: its buffer
// is unbounded), flushed on shutdown. The default is what src/service.ts does (src/log.ts: synchronous).
const asyncDest = env.BENCH_LOG_DEST === 'async' ? pino.destination({ dest: 1, sync: false }) : null;
const logLevel = env.BENCH_LOG_LEVEL ?? 'info';
const logger = asyncDest
  ? pino({ level: logLevel, base: { service: 'gatehouse' } }, asyncDest)
  : createLogger(logLevel);
// BENCH_POLICY_ENV='' means no environment (policy files that declare none).
const policyEnv = env.BENCH_POLICY_ENV === undefined ? 'prod' : env.BENCH_POLICY_ENV || null;
const policies = await createLivePolicies(env.BENCH_POLICY_DIR ?? './policies', policyEnv);
// BENCH_SHADOW_POLICY_DIR: SHADOW_POLICY_DIR (bench/shadow.mjs).
const shadow = env.BENCH_SHADOW_POLICY_DIR ? await createLivePolicies(env.BENCH_SHADOW_POLICY_DIR, policyEnv) : null;
const tPolicies = performance.now();

let approvals = null;
let limits = null;
let keys = null;
let sql = null;
if (env.BENCH_DATABASE_URL) {
  const { createSql } = await import('../../dist/db/connect.js');
  const { createApprovalStore } = await import('../../dist/approvals/store.js');
  const { createApprovalService } = await import('../../dist/approvals/service.js');
  const { createApprovalWaiter } = await import('../../dist/approvals/notify.js');
  sql = createSql(env.BENCH_DATABASE_URL, { max: Number(env.BENCH_DB_POOL_MAX ?? 10) });
  const store = createApprovalStore(sql, { approvalTtlMs: 86_400_000, grantTtlMs: 3_600_000, deadlineMs: 2_000 });
  const waiter = createApprovalWaiter(sql, store, env.BENCH_MAX_WAITS ? { maxTotal: Number(env.BENCH_MAX_WAITS) } : {});
  approvals = createApprovalService(sql, store, waiter);
  const { createKeys } = await import('../../dist/db/idempotency.js');
  keys = createKeys(sql, { deadlineMs: 2_000 });
  const { createLimitService } = await import('../../dist/budgets/service.js');
  const { createLanes } = await import('../../dist/db/lanes.js');
  // As src/service.ts: BUDGET_CONNECTIONS lanes (default 4).
  limits = createLimitService(sql, {
    deadlineMs: 2_000,
    lanes: createLanes(
      env.BENCH_DATABASE_URL,
      Number(env.BENCH_BUDGET_CONNECTIONS ?? 4),
      {},
      // With the decision store, as src/compose.ts: the records of the calls a lane counts, with its COMMIT.
      env.BENCH_DECISION_STORE_URL ? (await import('../../dist/records/insert.js')).insertRecords : undefined,
    ),
  });
}

const metrics = createMetrics(policies);
// BENCH_DECISION_STORE_URL: DECISION_STORE=postgres, as src/service.ts wires it (bench/decisions.mjs).
let decisionStore = null;
if (env.BENCH_DECISION_STORE_URL) {
  const { createSql } = await import('../../dist/db/connect.js');
  const { createDecisionWriter } = await import('../../dist/records/writer.js');
  const recordSql = createSql(env.BENCH_DECISION_STORE_URL, { max: 2, applicationName: 'gatehouse-decisions' });
  const writer = createDecisionWriter(recordSql, {
    queueMax: Number(env.BENCH_DECISION_QUEUE_MAX ?? 10_000),
    retentionMs: 30 * 86_400_000,
    log: logger,
    onDrop: (reason, count) => metrics.decisionRecordsDropped.inc({ reason }, count),
    onWritten: (count) => metrics.decisionRecordsWritten.inc(count),
  });
  decisionStore = { writer, sql: recordSql };
  await writer.flush(); // the partitions checked before serving, as src/service.ts does
}
const engine = createEngine({
  policies,
  shadow,
  approvals,
  limits,
  keys,
  records: decisionStore,
  metrics,
  log: logger,
  logArgs: env.BENCH_LOG_ARGS === 'true',
});
const ctx = {
  engine,
  adminRole: 'admin',
  approverRole: 'approver',
  runtimeRole: 'runtime',
  policyReaderRoles: ['admin', 'approver'],
  usage: loadConfig({}).usage,
};
const app = await buildApp(ctx, {
  bodyLimit: Number(env.BENCH_BODY_LIMIT ?? 1_048_576),
  // The service's defaults, or BENCH_MAX_CONNECTIONS (the attack benchmark holds 2,000 waits).
  connections: {
    ...loadConfig({}).connections,
    ...(env.BENCH_MAX_CONNECTIONS ? { maxConnections: Number(env.BENCH_MAX_CONNECTIONS) } : {}),
  },
  logger,
  auth: {
    key: env.BENCH_SECRET ?? SECRET,
    algorithm: 'HS256',
    issuer: null,
    audience: null,
    clockToleranceSec: 30,
    maxLifetimeSec: 86_400,
    claims: { team: 'team', agent: 'agent', roles: 'roles' },
  },
});
await app.ready();
const tReady = performance.now();
await app.listen({ port: Number(env.BENCH_PORT ?? 0), host: '127.0.0.1' });
const tListening = performance.now();
const port = /** @type {import('node:net').AddressInfo} */ (app.server.address()).port;
logger.info({ port }, 'gatehouse is serving');

const cpu = process.cpuUsage(); // CPU used so far (all threads): what contention for the CPU does not inflate
const timings = {
  imported: tImported,
  importsMs: tImported - tImported0,
  policiesLoaded: tPolicies,
  ready: tReady,
  listening: tListening,
  cpuMs: (cpu.user + cpu.system) / 1000,
};
if (process.send) process.send({ type: 'listening', port, timings, pid: process.pid });
else process.stderr.write(`listening on ${port} ${JSON.stringify(timings)}\n`);

// Diagnostics for the benchmarks: the process's own memory figures (after a full GC when started
// with --expose-gc), on request over IPC.
process.on('message', (/** @type {{ type?: string, gc?: boolean } | null} */ msg) => {
  if (msg?.type !== 'memory') return;
  if (msg.gc && typeof globalThis.gc === 'function') globalThis.gc();
  process.send?.({ type: 'memory', ...process.memoryUsage() });
});

let closing = false;
const shutdown = async () => {
  if (closing) return;
  closing = true;
  await app.close();
  await decisionStore?.writer.close();
  await decisionStore?.sql.end({ timeout: 5 });
  await approvals?.close();
  await limits?.close();
  await sql?.end({ timeout: 5 });
  logger.flush();
  asyncDest?.flushSync();
  process.disconnect?.();
  // A handle left open must not keep a finished server alive (a --cpu-prof profile is written at exit).
  setTimeout(() => process.exit(0), 2000).unref();
};
process.once('SIGTERM', () => void shutdown());
process.once('SIGINT', () => void shutdown());
process.on('disconnect', () => void shutdown());
