// The strict JSON boundary (docs/spec.md section 4): bytes → exactly one RFC 8259 value that is also I-JSON
// (RFC 7493: valid UTF-8, no duplicate names, no lone surrogates), nesting bounded, nothing after it.
// Errors carry a code, the BYTE offset into the UTF-8 input and a JSON pointer, and never quote the
// input: request bodies may hold secrets.

import { lineStarts, positionAt } from './positions.js';
import type { Position } from './positions.js';
import { ScanError } from './scan-error.js';
import type { ScanErrorCode } from './scan-error.js';
import { scan } from './scanner.js';
import type { Sites } from './scanner.js';
import { invalidUtf8Offset, isWellFormed, utf8Offset } from './unicode.js';
import type { JsonValue } from './value.js';

export type { Position } from './positions.js';

export type JsonErrorCode = ScanErrorCode | 'invalid_utf8';

const PROBLEMS: Record<JsonErrorCode, string> = {
  invalid_utf8: 'invalid UTF-8',
  empty: 'empty input',
  syntax: 'syntax error',
  duplicate_key: 'duplicate key',
  too_deep: 'nesting too deep',
  too_many_keys: 'too many object keys',
  lone_surrogate: 'lone surrogate',
  trailing_data: 'trailing data',
  number_out_of_range: 'number out of range',
};

export class JsonParseError extends Error {
  readonly code: JsonErrorCode;
  /** Byte offset into the UTF-8 input (for a string input: into its UTF-8 encoding). */
  readonly offset: number;
  /** JSON pointer of the value being parsed when it failed ("" is the whole document). */
  readonly pointer: string;

  constructor(code: JsonErrorCode, offset: number, pointer: string, detail?: string) {
    const problem = detail === undefined ? PROBLEMS[code] : code === 'syntax' ? `syntax error: ${detail}` : detail;
    super(`${problem} at byte ${offset}${pointer === '' ? '' : ` (${pointer})`}`);
    this.name = 'JsonParseError';
    this.code = code;
    this.offset = offset;
    this.pointer = pointer;
  }
}

export interface ParseOptions {
  /** Maximum nesting of arrays and objects; default 256. */
  maxDepth?: number;
  /**
   * Maximum number of object members in the whole document; default unlimited. Each key costs a
   * duplicate check here and a sort when hashing, so request bodies cap it to bound the work.
   */
  maxKeys?: number;
}

export interface PositionedJson {
  value: JsonValue;
  /** Pointer of every value (including "" for the root) → position of its first character. */
  values: Map<string, Position>;
  /** Pointer of every object member → position of its key's opening quote. */
  keys: Map<string, Position>;
}

const DEFAULT_MAX_DEPTH = 256;

// fatal: invalid UTF-8 is an error, never U+FFFD (two different bodies must not hash alike).
// ignoreBOM: keep a leading BOM in the text so it is rejected like any other stray character.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Parses exactly one JSON value. Numbers are JS numbers; where String(n) would not reproduce the text
 * (1.0, 1e2, -0, big integers) the lexeme is recorded with setNumberLexeme on the containing object or
 * array. A top-level number has no container, so its lexeme is not kept.
 */
export function parseJson(input: Uint8Array | string, options?: ParseOptions): JsonValue {
  const maxDepth = maxDepthOf(options);
  const text = typeof input === 'string' ? input : decode(input, maxDepth);
  return scanText(text, typeof input === 'string', maxDepth, options?.maxKeys ?? Infinity, null);
}

/** parseJson plus the line and column (1-based, UTF-16 columns) of every value and key. */
export function parseJsonWithPositions(input: Uint8Array | string, options?: ParseOptions): PositionedJson {
  const maxDepth = maxDepthOf(options);
  const text = typeof input === 'string' ? input : decode(input, maxDepth);
  const sites: Sites = { valuePointers: [], valueIndexes: [], keyPointers: [], keyIndexes: [] };
  const value = scanText(text, typeof input === 'string', maxDepth, options?.maxKeys ?? Infinity, sites);
  const starts = lineStarts(text);
  const values = new Map<string, Position>();
  sites.valuePointers.forEach((p, n) => {
    values.set(p, positionAt(starts, sites.valueIndexes[n] ?? 0));
  });
  const keys = new Map<string, Position>();
  sites.keyPointers.forEach((p, n) => {
    keys.set(p, positionAt(starts, sites.keyIndexes[n] ?? 0));
  });
  return { value, values, keys };
}

function maxDepthOf(options: ParseOptions | undefined): number {
  const maxDepth = options?.maxDepth ?? DEFAULT_MAX_DEPTH;
  if (!Number.isInteger(maxDepth) || maxDepth < 0) throw new RangeError('maxDepth must be a non-negative integer');
  return maxDepth;
}

function scanText(
  text: string,
  fromString: boolean,
  maxDepth: number,
  maxKeys: number,
  sites: Sites | null,
): JsonValue {
  // Decoded bytes are always well-formed; only a JS string can carry a raw lone surrogate.
  const rawSurrogates = fromString && !isWellFormed(text);
  try {
    return scan(text, { maxDepth, maxKeys, rawSurrogates, sites });
  } catch (e) {
    if (e instanceof ScanError) throw new JsonParseError(e.code, utf8Offset(text, e.index), e.pointer, e.detail);
    throw e;
  }
}

function decode(bytes: Uint8Array, maxDepth: number): string {
  try {
    return decoder.decode(bytes);
  } catch {
    const offset = Math.max(0, invalidUtf8Offset(bytes));
    throw new JsonParseError('invalid_utf8', offset, pointerBefore(bytes, offset, maxDepth));
  }
}

// The pointer of the value that the bad byte falls in: scan the valid prefix, which then stops at its
// end inside that value. Any other outcome (a prefix that parses, an earlier error) gives the root.
function pointerBefore(bytes: Uint8Array, offset: number, maxDepth: number): string {
  const prefix = decoder.decode(bytes.subarray(0, offset));
  try {
    scan(prefix, { maxDepth, maxKeys: Infinity, rawSurrogates: false, sites: null });
  } catch (e) {
    if (e instanceof ScanError && e.index === prefix.length && e.code !== 'empty') return e.pointer;
  }
  return '';
}
