// Shared helpers for the src/json tests.

import { JsonParseError, parseJson } from '../../src/json/parse.js';
import type { ParseOptions } from '../../src/json/parse.js';

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** The bytes of the ASCII parts (strings) and raw bytes (numbers), in order. */
export function bytesOf(...parts: (string | number)[]): Uint8Array {
  const out: number[] = [];
  for (const p of parts) {
    if (typeof p === 'number') out.push(p);
    else for (const b of utf8(p)) out.push(b);
  }
  return new Uint8Array(out);
}

/** The JsonParseError that parseJson throws for input (fails the test if it does not throw one). */
export function parseError(input: string | Uint8Array, options?: ParseOptions): JsonParseError {
  try {
    parseJson(input, options);
  } catch (e) {
    if (e instanceof JsonParseError) return e;
    throw e;
  }
  throw new Error('expected a JsonParseError');
}

/** Deep equality for JSON values: same key order, -0 distinct from 0, own "__proto__" keys compared. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' || typeof b === 'number') return Object.is(a, b);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  return ka.every((k, n) => k === kb[n] && sameJson(ra[k], rb[k]));
}

/** Like sameJson but ignoring object key order (for comparing values built from canonical text). */
export function sameJsonUnordered(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' || typeof b === 'number') return Object.is(a, b);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  if (ka.length !== kb.length) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  return ka.every((k, n) => k === kb[n] && Object.hasOwn(rb, k) && sameJsonUnordered(ra[k], rb[k]));
}

/**
 * An independent reference canonicalizer for valid JSON text: a regex tokenizer that keeps number
 * tokens verbatim, members sorted with an explicit code-unit comparator, strings via JSON.stringify.
 * It shares no code with src/json.
 */
export function referenceCanonical(text: string): string {
  const token =
    /[ \t\n\r]*("(?:[^"\\]|\\.)*"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|[{}[\],:])/y;
  let pos = 0;
  const next = (): string => {
    token.lastIndex = pos;
    const m = token.exec(text);
    if (m === null || m[1] === undefined) throw new Error(`reference tokenizer stuck at ${pos}`);
    pos = token.lastIndex;
    return m[1];
  };
  const value = (t: string): string => {
    if (t === '{') {
      const members: [string, string][] = [];
      let t2 = next();
      while (t2 !== '}') {
        if (t2 === ',') t2 = next();
        const name = JSON.parse(t2) as string;
        next(); // ':'
        members.push([name, value(next())]);
        t2 = next();
      }
      members.sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0));
      return '{' + members.map(([k, v]) => JSON.stringify(k) + ':' + v).join(',') + '}';
    }
    if (t === '[') {
      const items: string[] = [];
      let t2 = next();
      while (t2 !== ']') {
        if (t2 === ',') t2 = next();
        items.push(value(t2));
        t2 = next();
      }
      return '[' + items.join(',') + ']';
    }
    if (t.startsWith('"')) return JSON.stringify(JSON.parse(t) as string);
    return t; // number as written, true, false, null
  };
  return value(next());
}
