// The one error a condition can fail with at load. The loader adds file, line and key; the column here
// is relative to the condition text so an editor can point at the offending token.

export type ConditionErrorCode = 'syntax' | 'type' | 'secret_path' | 'too_long' | 'too_deep';

export class ConditionError extends Error {
  readonly code: ConditionErrorCode;
  /** 1-based column in the condition source, counted in UTF-16 code units. */
  readonly column: number;

  constructor(code: ConditionErrorCode, column: number, what: string) {
    super(`${what} (column ${column})`);
    this.name = 'ConditionError';
    this.code = code;
    this.column = column;
  }
}

/** Source bounds (docs/spec.md section 3 keeps conditions small; these make abuse an error, not a crash). */
export const MAX_SOURCE_LENGTH = 4096;
export const MAX_NESTING = 64;
export const MAX_LIST_ITEMS = 1024;
