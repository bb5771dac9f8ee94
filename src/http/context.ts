// What every route works with, and the one operation on it that is not a route's: a reload, asked
// for by POST /admin/reload or by SIGUSR2 (src/service.ts).
import type { Logger } from 'pino';
import type { ApprovalService } from '../approvals/service.js';
import type { Sql } from 'postgres';
import type { UsageSettings } from '../config.js';
import type { DecisionWriter } from '../decisions/writer.js';
import type { LimitService } from '../budgets/service.js';
import type { LivePolicies } from '../policy/live.js';
import type { WebhookEndpoint } from '../webhooks/events.js';
import type { Outbox } from '../webhooks/outbox.js';
import type { Metrics } from './metrics.js';

/** What the routes need, shared by all of them. */
export interface AppContext {
  readonly policies: LivePolicies;
  /** SHADOW_POLICY_DIR's set, decided beside the serving one on every /decide (src/http/shadow.ts); null when off. */
  readonly shadow?: LivePolicies | null;
  readonly metrics: Metrics;
  /** null when no database is configured: approval routes then answer 503. */
  readonly approvals: ApprovalService | null;
  /**
   * The counters of budgets and rate limits; null (or absent) without a database: a call they
   * select answers 503, and /decide of any other call is untouched (docs/spec.md section 2.9).
   */
  readonly limits?: LimitService | null;
  readonly log: Logger;
  readonly logArgs: boolean;
  readonly adminRole: string;
  readonly approverRole: string;
  /** FAST_GRANT_SECONDS (GET /approvals/stats); default 5. */
  readonly fastGrantSeconds?: number;
  /** Roles that may read `/explain` and `/policies` (POLICY_READER_ROLE): any one of them. */
  readonly policyReaderRoles: readonly string[];
  /** DECISION_STORE=postgres (src/decisions): the writer /decide queues on, and the pool GET /decisions reads; absent or null: off. */
  readonly decisionStore?: DecisionStoreAccess | null;
  /** AUDITOR_ROLE: may read GET /decisions, beside admins; default 'auditor'. */
  readonly auditorRole?: string;
  /** USAGE_ROLE, USAGE_ANY_ROLE and USAGE_MAX_USD: who may report spend to POST /usage, and how much at once. */
  readonly usage: UsageSettings;
  /** The webhook endpoints and the outbox, for GET /admin/webhooks; absent or null without a database (503). */
  readonly webhooks?: WebhookAdmin | null;
}

export interface DecisionStoreAccess {
  readonly writer: Pick<DecisionWriter, 'push'>;
  readonly sql: Sql;
}

export interface WebhookAdmin {
  /** WEBHOOKS as this replica has it (secrets are never shown). */
  readonly endpoints: readonly WebhookEndpoint[];
  readonly outbox: Pick<Outbox, 'list' | 'counts'>;
}

/** Reload, count it, and log a failure; shared by the route and SIGUSR2. */
export async function reloadAndReport(ctx: AppContext): Promise<{ ok: true } | { ok: false; problems: string[] }> {
  const [outcome] = await Promise.all([ctx.policies.reload(), reloadShadow(ctx)]);
  ctx.metrics.reloads.inc({ result: outcome.ok ? 'success' : 'failure' });
  if (outcome.ok) ctx.log.info({ policies: ctx.policies.current().identities }, 'policies reloaded');
  else ctx.log.error({ problems: outcome.problems }, 'policy reload failed; the previous set keeps serving');
  return outcome;
}

/** The shadow set is reloaded with the serving one; its failure keeps the previous shadow set and changes no answer. */
async function reloadShadow(ctx: AppContext): Promise<void> {
  if (!ctx.shadow) return;
  const outcome = await ctx.shadow.reload();
  ctx.metrics.shadowReloads.inc({ result: outcome.ok ? 'success' : 'failure' });
  if (outcome.ok) ctx.log.info({ shadow_policies: ctx.shadow.current().identities }, 'shadow policies reloaded');
  else ctx.log.error({ problems: outcome.problems }, 'shadow policy reload failed; the previous shadow set keeps deciding beside');
}
