// Prometheus metrics (prom-client), one registry per app so tests and replicas never share state.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { LivePolicies } from '../policy/live.js';

export interface MetricsOptions {
  defaultMetrics?: boolean;
  /** Log lines dropped so far (src/log.ts LogSink.dropped). */
  logLinesDropped?: () => number;
}

export function createMetrics(policies: LivePolicies, options: MetricsOptions = {}) {
  const registry = new Registry();
  if (options.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const decisions = new Counter({
    name: 'gatehouse_decisions_total',
    help: 'Decisions made, by outcome and deciding rule.',
    labelNames: ['decision', 'rule'] as const,
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
  return { registry, decisions, decideSeconds, reloads };
}

export type Metrics = ReturnType<typeof createMetrics>;
