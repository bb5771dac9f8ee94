// The decision engine: everything between a parsed, authenticated request and its answer. The routes
// (src/http/) parse, authenticate, call one method here and send what it returns; the stores under
// it (approvals, budgets, records, the Idempotency-Key table) are reached only through it. Built by
// the composition root (src/service.ts) from its parts, never from Fastify or the app's context.
import { toStoreError } from '../db/errors.js';
import type { JsonObject } from '../json/value.js';
import type { DecideRequest, Identity } from '../policy/model.js';
import { listDecisions, type DecisionPage, type DecisionQuery } from '../records/query.js';
import type { Answer } from './answer.js';
import { standingsOf } from './counters.js';
import { decideCall, type DecideCall } from './decide.js';
import { explainCall } from './explain.js';
import { inspectCall, type InspectCall } from './inspect.js';
import { fileCall, type FileCall } from './file.js';
import { grantCall, type GrantCall } from './amend.js';
import type { TransitionResult } from '../approvals/store.js';
import { NotConfiguredError } from './errors.js';
import { approvalsOf } from './limits.js';
import type { EngineParts } from './parts.js';
import { reloadAndReport, type ReloadOutcome } from './reload.js';
import { recordUsage, type UsageReport } from './usage.js';
import type { ApprovalService } from '../approvals/service.js';

export interface Engine {
  readonly parts: EngineParts;
  /** /decide: never awaits for a call that asks for no state (the hot path). */
  decide(call: DecideCall): Answer | Promise<Answer>;
  /** POST /inspect: never awaits unless it redeems a result's review (`approval_id`). */
  inspect(call: InspectCall): Answer | Promise<Answer>;
  /** POST /approvals. */
  file(call: FileCall): Promise<Answer>;
  /** POST /approvals/{id}/grant: a grant, of the call as amended when it carries arguments. */
  grant(call: GrantCall): Promise<TransitionResult>;
  /** POST /explain: the decision and its trace; never counts, never redeems. */
  explain(request: DecideRequest, identity: Identity): Promise<Answer>;
  /** POST /usage. */
  report(usage: UsageReport): Promise<Answer & { kind: 'text' }>;
  /** GET /budgets: the caller's limits and counters (an admin's: every limit and counter). */
  standings(identity: Identity, options: { admin: boolean; max: number }): Promise<JsonObject>;
  /** The approvals (their store, waits and feed), ready, or NotConfiguredError. */
  approvals(): ApprovalService;
  /** GET /decisions: a page of the decision store, or NotConfiguredError (DECISION_STORE is off). */
  records(query: DecisionQuery): Promise<DecisionPage>;
  /** POST /admin/reload and SIGUSR2: the serving set and the shadow set, reloaded together. */
  reload(): Promise<ReloadOutcome>;
}

export function createEngine(parts: EngineParts): Engine {
  return {
    parts,
    decide: (call) => decideCall(parts, call),
    inspect: (call) => inspectCall(parts, call),
    file: (call) => fileCall(parts, call),
    grant: (call) => grantCall(parts, call),
    explain: (request, identity) => explainCall(parts, request, identity),
    report: (usage) => recordUsage(parts, usage),
    standings: (identity, options) => standingsOf(parts, identity, options),
    approvals() {
      const approvals = approvalsOf(parts.approvals);
      approvals.ensureReady();
      return approvals;
    },
    async records(query) {
      if (parts.records === null) throw new NotConfiguredError('the decision store is off (DECISION_STORE)');
      try {
        return await listDecisions(parts.records.sql, query);
      } catch (err) {
        throw toStoreError(err);
      }
    },
    reload: () => reloadAndReport(parts.policies, parts.shadow, parts.metrics, parts.log),
  };
}

export type { Answer } from './answer.js';
export type { DecideCall } from './decide.js';
export type { FileCall } from './file.js';
export type { GrantCall } from './amend.js';
export type { InspectCall } from './inspect.js';
export type { EngineParts } from './parts.js';
export type { ReloadOutcome } from './reload.js';

// What the HTTP layer reads of the stores under the engine: their shapes and limits, never their code.
export { APPROVAL_STATUSES, LIMITS } from '../approvals/approval.js';
export type { Approval, ApprovalStatus, ApprovalSummary, Approver, Grant } from '../approvals/approval.js';
export type { FeedEvent } from '../approvals/feed.js';
export type { ApprovalService } from '../approvals/service.js';
export type { TransitionResult } from '../approvals/store.js';
export { IDEMPOTENCY_KEY } from '../db/idempotency.js';
export type { IdempotencyClaim, IdempotentRoute } from '../db/idempotency.js';
export type { ListOrder } from '../kernel/cursor.js';
export type { StoredDecision } from '../records/query.js';
export type { OperatorSession, SessionStore } from '../sessions/store.js';
export type { WebhookEndpoint } from '../webhooks/events.js';
export { DELIVERY_STATUSES } from '../webhooks/outbox.js';
export type { DeliveryStatus, Outbox } from '../webhooks/outbox.js';
export { approvalView, summaryView } from './answer.js';
export type { Metrics } from './metrics.js';
