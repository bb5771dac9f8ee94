// Reading arguments for a condition: own properties only, so an inherited member (`constructor`,
// `toString`, the `__proto__` accessor, anything added to Object.prototype) is never seen, and an
// array exposes its in-range indexes only (`length` is not readable). Anything else is MISSING,
// represented as `undefined` (which JSON never produces), so a lookup allocates nothing but the
// ExactNumber of a number written other than String(number) (1.0, 1e2, a big integer).
import { decimalOf, type Decimal } from '../../json/decimal.js';
import { numberLexeme, type JsonObject } from '../../json/value.js';

/**
 * A number as conditions compare it: its double, and its value as written (the argument's lexeme, the
 * literal's text). 1234567890123456800 and 1234567890123456789 are the same double: a tool reading
 * doubles cannot tell them apart, the request can, so compare.ts calls such a pair undecidable. Its
 * exact() is null when it cannot be computed (an exponent too long, see json/decimal.ts).
 */
export class ExactNumber {
  private decimal: Decimal | null | undefined;

  constructor(
    /** The nearest double. */
    readonly double: number,
    /**
     * The text as written, or undefined when that is String(double) (asExact of a bare double). Two
     * numbers without one compare as doubles, which gives the same order as their decimals (distinct
     * doubles have distinct, equally ordered shortest texts) without reading any text.
     */
    readonly lexeme: string | undefined,
    /** The exact value when already known (a literal's, computed at load). */
    decimal?: Decimal,
  ) {
    this.decimal = decimal;
  }

  /** The exact value, computed at most once; null when it cannot be compared. */
  exact(): Decimal | null {
    if (this.decimal === undefined) this.decimal = decimalOf(this.lexeme ?? String(this.double));
    return this.decimal;
  }
}

/** One compiled path segment: the object key, and the array index when the segment is an integer. */
export interface Segment {
  readonly key: string;
  /** -1 when the segment is a name, so it never selects an array element. */
  readonly index: number;
}

export function toSegments(segments: readonly string[]): Segment[] {
  // The lexer only lets through names and integers of at most 9 digits without leading zeros.
  return segments.map((key) => ({ key, index: /^[0-9]+$/.test(key) ? Number(key) : -1 }));
}

/** The value at the path as an operand (see operandAt), or undefined when it is MISSING. */
export function lookup(args: JsonObject, segments: readonly Segment[]): unknown {
  let cur: unknown = args;
  // Where cur was read from: a number's lexeme is recorded against its container and key.
  let container: object = args;
  let key: string | number = '';
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!; // i < length
    if (Array.isArray(cur)) {
      // hasOwn as well as the bound: a sparse array's hole is missing, not undefined-as-a-value.
      if (seg.index < 0 || seg.index >= cur.length || !Object.hasOwn(cur, seg.index)) return undefined;
      container = cur;
      key = seg.index;
      cur = cur[seg.index];
    } else if (typeof cur === 'object' && cur !== null) {
      if (!Object.hasOwn(cur, seg.key)) return undefined;
      container = cur;
      key = seg.key;
      // After hasOwn this reads the own property, even one named `__proto__`.
      cur = (cur as Record<string, unknown>)[seg.key];
    } else {
      return undefined;
    }
  }
  return operandAt(container, key, cur);
}

/**
 * value, read from container[key], as an operand: a finite number with a lexeme recorded beside it
 * (parsed JSON records one only where String(value) is not the text) becomes an ExactNumber. Anything
 * else is returned as it is: a bare number is its own text, and most numbers stay bare, so reading one
 * allocates nothing.
 */
export function operandAt(container: object, key: string | number, value: unknown): unknown {
  if (typeof value !== 'number' || !Number.isFinite(value)) return value;
  const lexeme = numberLexeme(container, key);
  return lexeme === undefined ? value : new ExactNumber(value, lexeme);
}

/** An operand of kind 'number' as an ExactNumber (a bare double is its own text). */
export function asExact(v: unknown): ExactNumber {
  return v instanceof ExactNumber ? v : new ExactNumber(v as number, undefined);
}

/** The double of an operand of kind 'number'. */
export function doubleOf(v: unknown): number {
  return v instanceof ExactNumber ? v.double : (v as number);
}

/**
 * The JSON type of a looked-up value (an ExactNumber is a number). `other` is whatever JSON cannot
 * hold (NaN, Infinity, a function, a bigint): it can only arrive through a bug upstream, and never
 * compares (undecidable).
 */
export type Kind = 'missing' | 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object' | 'other';

export function kindOf(v: unknown): Kind {
  switch (typeof v) {
    case 'undefined':
      return 'missing';
    case 'boolean':
      return 'boolean';
    case 'string':
      return 'string';
    case 'number':
      return Number.isFinite(v) ? 'number' : 'other';
    case 'object':
      return v === null ? 'null' : Array.isArray(v) ? 'array' : v instanceof ExactNumber ? 'number' : 'object';
    default:
      return 'other';
  }
}

export function isScalarKind(k: Kind): boolean {
  return k === 'null' || k === 'boolean' || k === 'number' || k === 'string';
}
