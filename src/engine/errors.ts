// What the engine and the stores under it refuse, as domain errors: src/http/errors.ts maps each to
// its status in one table. The engine's own is NotConfiguredError; the others are the stores',
// named here so that the HTTP layer knows them without reaching into a store.
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
