// What the engine is made of (the composition root, src/service.ts, builds them), and what every
// call into it carries. An absent capability is null here: the call that needs it answers
// NotConfiguredError (503), and no other call is touched.
import type { BaseLogger, Logger } from 'pino';
import type { Sql } from 'postgres';
import type { ApprovalService } from '../approvals/service.js';
import type { LimitService } from '../budgets/service.js';
import type { IdempotencyClaim, Keys } from '../db/idempotency.js';
import type { LivePolicies } from '../policy/live.js';
import type { DecideRequest, Identity } from '../policy/model.js';
import type { Metrics } from './metrics.js';
import type { DecisionLine } from '../policy/record.js';

export interface EngineParts {
  readonly policies: LivePolicies;
  /** SHADOW_POLICY_DIR's set, decided beside the serving one (./shadow.ts). */
  readonly shadow: LivePolicies | null;
  /** Without a database: approval calls answer 503; /decide without approval_id is untouched. */
  readonly approvals: ApprovalService | null;
  /** The counters of budgets and rate limits; without a database a call they select answers 503 (docs/spec.md section 2.9). */
  readonly limits: LimitService | null;
  /** The Idempotency-Key table (src/db/idempotency.ts). */
  readonly keys: Keys | null;
  /** DECISION_STORE: where records are queued besides the log, and the pool that reads them back. */
  readonly records: { readonly writer: DecisionRecords; readonly sql: Sql } | null;
  readonly metrics: Metrics;
  /** The process's log (reloads); a call's own lines go to the call's log. */
  readonly log: Logger;
  /** LOG_ARGS: records carry the arguments, claims, context and run view, redacted. */
  readonly logArgs: boolean;
}

/** One call into the engine: the request, who asks, and where its lines are logged. */
export interface Call {
  readonly request: DecideRequest;
  readonly identity: Identity;
  /**
   * The request's Idempotency-Key, read only by a call that acts on the database (a malformed key is
   * the transport's 400, raised when read, as before any other refusal of that call).
   */
  readonly claim: () => IdempotencyClaim | undefined;
  readonly log: CallLog;
}

/** A call's log: the request's own (its lines carry the request id). */
export type CallLog = Pick<BaseLogger, 'info' | 'error'>;

/**
 * Where records go besides the log: the decision store's queue (never waits), or, for a decision
 * that writes to PostgreSQL anyway, that decision's own transaction (src/records/writer.ts).
 */
export interface DecisionRecords {
  push(line: DecisionLine): void;
  /** The record's row for the decision's own transaction (src/records/insert.ts), or null: push it instead. */
  rowOf(line: DecisionLine): string | null;
}
