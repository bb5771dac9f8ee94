// What the approval store refuses, as domain errors: http/errors.ts maps each to its status.
import type { ApprovalSummary } from './approval.js';

/**
 * The requester already holds maxPendingPerRequester unexpired pending approvals: one agent cannot
 * flood the operators' queue. The route answers 429; a decision or an expiry frees a place.
 */
export class PendingLimitError extends Error {
  constructor(readonly limit: number) {
    super(`the requester already has ${limit} pending approvals`);
    this.name = 'PendingLimitError';
  }
}

/** The arguments are larger than an approval may hold: nothing is stored, the route answers 413. */
export class ApprovalTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`the canonical arguments are larger than ${limit} bytes`);
    this.name = 'ApprovalTooLargeError';
  }
}

/**
 * The requester's same request was denied less than the cooldown ago: nothing is stored, the route
 * answers 409 with the denial, so one agent cannot put a refused request back in front of the
 * operators at once.
 */
export class RecentlyDeniedError extends Error {
  constructor(
    readonly denial: ApprovalSummary,
    readonly retryAfterSec: number,
  ) {
    super('the same request was denied recently');
    this.name = 'RecentlyDeniedError';
  }
}

/** Input the database could not hold (too long, or containing U+0000): the route answers 400/422. */
export class ApprovalInputError extends Error {
  readonly field: string;
  constructor(field: string, problem: string) {
    super(`${field}: ${problem}`);
    this.name = 'ApprovalInputError';
    this.field = field;
  }

  /** The field is a requester's or an approver's identity, from the token, not from the body. */
  get fromToken(): boolean {
    return this.field.startsWith('requester.') || this.field.startsWith('approver.');
  }
}

/** Why an approver may not answer a requirement: which of its lists, or its separation, leaves them out. */
export type IneligibleWhy = 'role' | 'team' | 'user' | 'separation';

/** An open requirement (short of its quorum) the approver may not answer, and why. */
export interface Ineligible {
  readonly rule: string;
  readonly policy: string;
  readonly why: readonly IneligibleWhy[];
}

/**
 * The approver may answer none of the approval's open requirements (docs/spec.md section 5.4): the
 * route answers 403 `not_eligible`, naming each requirement's rule and why; nothing is written.
 */
export class NotEligibleError extends Error {
  constructor(readonly requirements: readonly Ineligible[]) {
    super('the approver may answer none of the open requirements');
    this.name = 'NotEligibleError';
  }
}
