// The scanner's internal failure. parse.ts turns it into a JsonParseError with a byte offset.

export type ScanErrorCode =
  | 'empty'
  | 'syntax'
  | 'duplicate_key'
  | 'too_deep'
  | 'too_many_keys'
  | 'lone_surrogate'
  | 'trailing_data'
  | 'number_out_of_range';

/** Code, UTF-16 index and pointer. Not an Error (no stack to capture): it never escapes parse.ts. */
export class ScanError {
  pointer = '';
  constructor(
    readonly code: ScanErrorCode,
    readonly index: number,
    /** A fixed phrase saying what was wrong; never text taken from the input. */
    readonly detail: string,
  ) {}
}

export function fail(code: ScanErrorCode, index: number, detail: string): never {
  throw new ScanError(code, index, detail);
}
