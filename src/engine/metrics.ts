// Prometheus metrics (prom-client), one registry per app so tests and replicas never share state.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { LivePolicies } from '../policy/live.js';
import type { OutboxCount } from '../webhooks/outbox.js';

export interface MetricsOptions {
  defaultMetrics?: boolean;
  /** Log lines dropped so far (src/log.ts LogSink.dropped). */
  logLinesDropped?: () => number;
  /** The webhook outbox's pending and failed rows, read from the database at each scrape. */
  webhookCounts?: () => Promise<OutboxCount[]>;
}

export function createMetrics(policies: LivePolicies, options: MetricsOptions = {}) {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const decisions = new Counter({
    name: 'gatehouse_decisions_total',
    help: "Decisions made, by outcome and deciding rule; POST /inspect's also by stage (result, llm_request, llm_response).",
    labelNames: ['decision', 'rule', 'stage'] as const,
    registers: [registry],
  });
  const decideSeconds = new Histogram({
    name: 'gatehouse_decide_duration_seconds',
    help: 'Time spent evaluating policies for one request (excludes HTTP and database).',
    buckets: [0.000_001, 0.000_005, 0.000_01, 0.000_05, 0.000_1, 0.000_5, 0.001, 0.005, 0.01],
    registers: [registry],
  });
  const reloads = new Counter({
    name: 'gatehouse_policy_reloads_total',
    help: 'Policy reloads, by result.',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'gatehouse_policy_set_age_seconds',
    help: 'Seconds since the serving policy set was loaded.',
    registers: [registry],
    collect() {
      this.set((Date.now() - policies.loadedAt().getTime()) / 1000);
    },
  });
  new Gauge({
    name: 'gatehouse_policy_files',
    help: 'Policy files in the serving set.',
    registers: [registry],
    collect() {
      this.set(policies.current().files.length);
    },
  });
  const { logLinesDropped } = options;
  if (logLinesDropped !== undefined) {
    let counted = 0;
    new Counter({
      name: 'gatehouse_log_lines_dropped_total',
      help: 'Log lines (the decision log included) dropped: the log destination failed, or too much was waiting for it.',
      registers: [registry],
      collect() {
        const now = logLinesDropped();
        if (now > counted) this.inc(now - counted);
        counted = now;
      },
    });
  }
  // Per replica: what each of its delivery attempts came to (src/webhooks/worker.ts).
  const webhookAttempts = new Counter({
    name: 'gatehouse_webhook_attempts_total',
    help: 'Webhook delivery attempts made by this replica, by endpoint and outcome: delivered, pending (another attempt will follow) or failed (the retry window is over).',
    labelNames: ['endpoint', 'outcome'] as const,
    registers: [registry],
  });
  const { webhookCounts } = options;
  if (webhookCounts !== undefined) {
    // Of the whole database, the same on every replica: alert on failed > 0.
    new Gauge({
      name: 'gatehouse_webhook_deliveries',
      help: 'Webhook deliveries in the outbox that are pending (not yet delivered, being retried) or failed (given up), by endpoint.',
      labelNames: ['endpoint', 'status'] as const,
      registers: [registry],
      async collect() {
        let counts: OutboxCount[];
        try {
          counts = await webhookCounts();
        } catch {
          return; // the database did not answer: the last values stand
        }
        this.reset();
        for (const c of counts) this.set({ endpoint: c.endpoint, status: c.status }, c.count);
      },
    });
  }
  // SHADOW_POLICY_DIR (src/engine/shadow.ts): present, and zero, when shadow mode is off.
  const shadowDecisions = new Counter({
    name: 'gatehouse_shadow_decisions_total',
    help: 'Requests the shadow policy set (SHADOW_POLICY_DIR) decided beside the serving set.',
    registers: [registry],
  });
  const shadowDisagreements = new Counter({
    name: 'gatehouse_shadow_disagreements_total',
    help: 'Requests the shadow policy set decided otherwise than the serving set, by serving decision, shadow decision and the shadow rule that decided.',
    labelNames: ['serving', 'shadow', 'rule'] as const,
    registers: [registry],
  });
  const shadowReloads = new Counter({
    name: 'gatehouse_shadow_policy_reloads_total',
    help: 'Reloads of the shadow policy set, by result.',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  // DECISION_STORE=postgres (src/records/writer.ts): present, and zero, when the store is off.
  const decisionRecordsDropped = new Counter({
    name: 'gatehouse_decision_records_dropped_total',
    help: 'Decision records not written to the decision store (DECISION_STORE), by reason: queue_full (DECISION_QUEUE_MAX records were waiting), rejected (the database refused their batch), shutdown (still queued when the shutdown ended).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const decisionRecordsWritten = new Counter({
    name: 'gatehouse_decision_records_written_total',
    help: 'Decision records written to the decision store (DECISION_STORE).',
    registers: [registry],
  });
  return {
    registry,
    decisionRecordsDropped,
    decisionRecordsWritten,
    decisions,
    decideSeconds,
    reloads,
    webhookAttempts,
    shadowDecisions,
    shadowDisagreements,
    shadowReloads,
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
