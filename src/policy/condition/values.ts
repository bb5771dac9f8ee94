// Reading arguments for a condition: own properties only, so an inherited member (`constructor`,
// `toString`, the `__proto__` accessor, anything added to Object.prototype) is never seen, and an
// array exposes its in-range indexes only (`length` is not readable). Anything else is MISSING,
// represented as `undefined` (which JSON never produces), so a lookup allocates nothing.
import type { JsonObject } from '../../json/value.js';

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

/** The value at the path, or undefined when it is MISSING. */
export function lookup(args: JsonObject, segments: readonly Segment[]): unknown {
  let cur: unknown = args;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!; // i < length
    if (Array.isArray(cur)) {
      // hasOwn as well as the bound: a sparse array's hole is missing, not undefined-as-a-value.
      if (seg.index < 0 || seg.index >= cur.length || !Object.hasOwn(cur, seg.index)) return undefined;
      cur = cur[seg.index];
    } else if (typeof cur === 'object' && cur !== null) {
      if (!Object.hasOwn(cur, seg.key)) return undefined;
      // After hasOwn this reads the own property, even one named `__proto__`.
      cur = (cur as Record<string, unknown>)[seg.key];
    } else {
      return undefined;
    }
  }
  return cur;
}

/**
 * The JSON type of a looked-up value. `other` is whatever JSON cannot hold (NaN, Infinity, a function,
 * a bigint): it can only arrive through a bug upstream, and never compares (undecidable).
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
      return v === null ? 'null' : Array.isArray(v) ? 'array' : 'object';
    default:
      return 'other';
  }
}

export function isScalarKind(k: Kind): boolean {
  return k === 'null' || k === 'boolean' || k === 'number' || k === 'string';
}
