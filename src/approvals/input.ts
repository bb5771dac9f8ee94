// Checks of what the store is given, before any SQL: what PostgreSQL text could not hold, or the
// schema would refuse, is a clear input error instead of a 500.
import { isWellFormed } from '../json/unicode.js';
import { LIMITS, type Requester } from './approval.js';
import { ApprovalInputError } from './errors.js';

export const HASH = /^sha256:[0-9a-f]{64}$/;

export function storable(value: string, max: number): boolean {
  return !value.includes('\u0000') && isWellFormed(value) && [...value].length <= max;
}

// PostgreSQL text cannot hold U+0000, and the CHECKs bound lengths; saying so here turns what would be a
// 500 into a clear input error.
export function checkText(field: string, value: string, max: number): void {
  if (value.includes('\u0000')) throw new ApprovalInputError(field, 'contains U+0000');
  if (!isWellFormed(value)) throw new ApprovalInputError(field, 'contains a lone surrogate');
  if ([...value].length > max) throw new ApprovalInputError(field, `longer than ${max} characters`);
}

export function checkName(field: string, value: string): void {
  if (value.length === 0) throw new ApprovalInputError(field, 'is empty');
  checkText(field, value, LIMITS.name);
}

export function checkRequester(requester: Requester): void {
  checkName('requester.sub', requester.sub);
  if (requester.team !== null) checkName('requester.team', requester.team);
  if (requester.agent !== null) checkName('requester.agent', requester.agent);
  if (requester.name !== null) checkName('requester.name', requester.name);
}

export function positiveMs(ms: number, name: string): number {
  if (!Number.isSafeInteger(ms) || ms <= 0) throw new RangeError(`${name} must be a positive integer (milliseconds)`);
  return ms;
}

/** Milliseconds as the text of an SQL interval (sent as a parameter and cast: `${…}::interval`). */
export function interval(ms: number): string {
  return `${ms} milliseconds`;
}
