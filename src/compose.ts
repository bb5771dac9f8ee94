// The composition root: the object graph of a serving Gatehouse (stores, the engine, what the routes
// work with), built from the configuration and the process's resources. Running the process (the
// database, migrations, signals, listening) is src/service.ts's; this builds, and hands each thing
// that must be closed to `opened`, last opened closed first.
import type { Logger } from 'pino';
import type { Sql } from 'postgres';
import { createApprovalWaiter } from './approvals/notify.js';
import { createApprovalService } from './approvals/service.js';
import { createApprovalStore } from './approvals/store.js';
import { createLimitService } from './budgets/service.js';
import type { Config } from './config.js';
import { createSql } from './db/connect.js';
import { createKeys } from './db/idempotency.js';
import { createLanes } from './db/lanes.js';
import { createEngine, type Engine } from './engine/index.js';
import { createMetrics } from './engine/metrics.js';
import type { AppContext } from './http/context.js';
import type { LivePolicies } from './policy/live.js';
import { insertRecords } from './records/insert.js';
import { createDecisionWriter } from './records/writer.js';
import { approvalLink } from './webhooks/events.js';
import { createOutbox, queueEventsOf } from './webhooks/outbox.js';
import { createWebhookWorker } from './webhooks/worker.js';

export interface Resources {
  readonly config: Config;
  readonly logger: Logger;
  readonly policies: LivePolicies;
  readonly shadow: LivePolicies | null;
  /** The database's address, and the pool the requests use. */
  readonly url: string;
  readonly sql: Sql;
  /** Whether the migrations have been applied (the stores answer 503 until then). */
  readonly migrated: () => boolean;
  /** Log lines dropped so far (src/log.ts). */
  readonly logLinesDropped: () => number;
  readonly opened: { push(what: string, close: () => Promise<unknown>): void };
}

export interface Composed {
  readonly engine: Engine;
  readonly ctx: AppContext;
  /** Closes what answers long-polls and delivers webhooks, as the HTTP server drains. */
  readonly closeDuringDrain: () => Promise<unknown>;
  /**
   * With DECISION_STORE: the decision store's partitions checked once (a failure is the writer's to
   * log and retry). Awaited before serving, so a decision's transaction can carry its record from the
   * first request on (until then its record is queued).
   */
  readonly recordsReady: () => Promise<void>;
}

export function compose(r: Resources): Composed {
  const { config, logger, sql, url, opened, migrated } = r;
  const store = createApprovalStore(sql, {
    approvalTtlMs: config.approvalTtlMs,
    grantTtlMs: config.grantTtlMs,
    deadlineMs: config.dbDeadlineMs,
    maxPendingPerRequester: config.maxPendingApprovals,
    maxArgsBytes: config.approvalMaxBytes,
    deniedCooldownMs: config.deniedCooldownMs,
    // Each transition queues its webhook events in its own transaction (src/webhooks/outbox.ts).
    ...queueEventsOf({ endpoints: config.webhooks.endpoints, link: (id) => approvalLink(config.publicUrl, id) }),
  });
  const waiter = createApprovalWaiter(sql, store, {
    maxPerCaller: config.maxWaitsPerCaller,
    maxTotal: config.maxWaits,
  });
  // Opens the LISTEN connection and starts the sweeper.
  const approvals = createApprovalService(sql, store, waiter, { schemaReady: migrated });
  let approvalsClosing: Promise<void> | null = null;
  const closeApprovals = (): Promise<void> => (approvalsClosing ??= approvals.close());
  opened.push('the approvals (LISTEN connection, sweeper)', closeApprovals);
  // Budgets and rate limits: their transactions under the same deadline, and the sweep of ended windows.
  // One-counter calls go through lanes of their own (connections opened only when a call needs one).
  // With DECISION_STORE, a lane's transaction also inserts the records of the calls it counted (with its COMMIT).
  const lanes = createLanes(
    url,
    config.budgetConnections,
    {},
    config.decisionStore !== null ? insertRecords : undefined,
  );
  const limits = createLimitService(sql, { deadlineMs: config.dbDeadlineMs, schemaReady: migrated, lanes });
  opened.push('the budget counters (sweeper)', () => limits.close());
  const keys = createKeys(sql, {
    deadlineMs: config.dbDeadlineMs,
    caps: { maxKeys: config.idempotencyMaxKeys, maxBytes: config.idempotencyMaxBytes },
  });
  const outbox = createOutbox(sql, { deadlineMs: config.dbDeadlineMs });
  const metrics = createMetrics(r.policies, {
    logLinesDropped: r.logLinesDropped,
    webhookCounts: () => outbox.counts(),
  });
  let closeWebhooks = async (): Promise<void> => {};
  if (config.webhooks.endpoints.length > 0) {
    // A pool of its own: deliveries never wait for, or hold, a connection the requests need.
    const deliverySql = createSql(url, { max: 2, applicationName: 'gatehouse-webhooks' });
    opened.push('the webhook delivery pool', () => deliverySql.end({ timeout: 5 }));
    const worker = createWebhookWorker(createOutbox(deliverySql, { deadlineMs: config.dbDeadlineMs }), sql, {
      ...config.webhooks,
      log: logger,
      onOutcome: (endpoint, outcome) => metrics.webhookAttempts.inc({ endpoint, outcome }),
      schemaReady: migrated,
    });
    let workerClosing: Promise<void> | null = null;
    closeWebhooks = () => (workerClosing ??= worker.close());
    opened.push('the webhook worker', closeWebhooks);
    worker.start();
    // Names and origins only: a secret, or a Slack URL's path, never reaches the log.
    const endpoints = config.webhooks.endpoints.map((e) => ({
      name: e.name,
      format: e.format,
      origin: new URL(e.url).origin,
    }));
    logger.info({ endpoints }, 'delivering webhooks');
  }
  let records: Engine['parts']['records'] = null;
  let recordsReady = async (): Promise<void> => {};
  if (config.decisionStore !== null) {
    // A pool of its own, like the webhooks': the batches never wait for, or hold, a connection the
    // requests need. Closed after the HTTP server (the stack closes last opened first), so the
    // records of the requests that finish during the drain are queued before the last flush.
    const recordSql = createSql(url, { max: 2, applicationName: 'gatehouse-decisions' });
    opened.push('the decision store pool', () => recordSql.end({ timeout: 5 }));
    const writer = createDecisionWriter(recordSql, {
      queueMax: config.decisionStore.queueMax,
      retentionMs: config.decisionStore.retentionMs,
      log: logger,
      onDrop: (reason, count) => metrics.decisionRecordsDropped.inc({ reason }, count),
      onWritten: (count) => metrics.decisionRecordsWritten.inc(count),
    });
    opened.push('the decision store writer (writing what is queued)', () => writer.close());
    records = { writer, sql: recordSql };
    recordsReady = () => writer.flush();
    logger.info(
      { queue_max: config.decisionStore.queueMax, retention_ms: config.decisionStore.retentionMs },
      'recording decisions in the database',
    );
  }
  const engine = createEngine({
    policies: r.policies,
    shadow: r.shadow,
    approvals,
    limits,
    keys,
    records,
    metrics,
    log: logger,
    logArgs: config.logArgs,
  });
  const ctx: AppContext = {
    engine,
    auditorRole: config.auditorRole,
    adminRole: config.adminRole,
    approverRole: config.approverRole,
    runtimeRole: config.runtimeRole,
    fastGrantSeconds: config.fastGrantSeconds,
    policyReaderRoles: config.policyReaderRoles,
    usage: config.usage,
    webhooks: { endpoints: config.webhooks.endpoints, outbox },
  };
  return { engine, ctx, closeDuringDrain: () => Promise.all([closeApprovals(), closeWebhooks()]), recordsReady };
}
