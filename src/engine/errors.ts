// What the engine and the stores under it refuse, as domain errors: src/http/errors.ts maps each to
// its status in one table. The engine's own is NotConfiguredError; the others are the stores',
// named here so that the HTTP layer knows them without reaching into a store.
import type { DecisionResult } from '../policy/model.js';

export {
  ApprovalInputError,
  ApprovalTooLargeError,
  NotEligibleError,
  PendingLimitError,
  RecentlyDeniedError,
} from '../approvals/errors.js';
export { WaitLimitError } from '../approvals/notify.js';
export { OutcomeUnknownError, StoreUnavailableError } from '../db/errors.js';
export { IdempotencyKeyReusedError, IdempotencyLimitError } from '../db/idempotency.js';
export { ListQueryError } from '../kernel/errors.js';

/**
 * A capability the call needs is not configured (no database: approvals, budgets and rate limits,
 * Idempotency-Keys): answered 503, nothing done.
 */
export class NotConfiguredError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotConfiguredError';
  }
}

/**
 * An approver's amendment the policy does not let stand (docs/spec.md section 5.4): the amended call
 * is denied or aborted (`decision`), or the approval is one that cannot be amended (`decision` null).
 */
export class AmendmentRefusedError extends Error {
  constructor(
    message: string,
    readonly decision: DecisionResult | null,
  ) {
    super(message);
    this.name = 'AmendmentRefusedError';
  }
}
