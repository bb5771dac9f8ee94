// Concrete tool names for a catalogue glob (`lookup_*`), for the property cases of policy test files
// (never.ts): a property about a glob entry is checked over names the service would accept and the
// entry describes. Generated, not enumerated: `*` stands for a few tool-name characters.
import fc from 'fast-check';
import type { Glob } from './glob.js';
import { TOOL_NAME_PATTERN } from './request.js';

// The characters of a tool name (request.ts), letters first: constantFrom shrinks towards the first.
const NAME_CHARS = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:/'];
const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN);
const MAX_STAR = 8;

/**
 * Names written by a glob's source: `*` as 0 to 8 tool-name characters, `?` one, a `[...]` class one
 * of the tool-name characters it admits. Null when a class admits none. The source has already been
 * compiled (glob.ts), so only the syntax that compiled is read here.
 */
export function globNameArbitrary(source: string): fc.Arbitrary<string> | null {
  const parts: fc.Arbitrary<string>[] = [];
  let i = 0;
  while (i < source.length) {
    const ch = source[i]!;
    if (ch === '*') {
      parts.push(fc.string({ unit: fc.constantFrom(...NAME_CHARS), maxLength: MAX_STAR }));
      i++;
    } else if (ch === '?') {
      parts.push(fc.constantFrom(...NAME_CHARS));
      i++;
    } else if (ch === '[') {
      const { chars, end } = readClass(source, i);
      if (chars.length === 0) return null;
      parts.push(fc.constantFrom(...chars));
      i = end;
    } else {
      parts.push(fc.constant(ch));
      i++;
    }
  }
  return fc.tuple(...parts).map((p) => p.join(''));
}

/** The tool-name characters a class `[...]` starting at `open` admits, and the index after its `]`. */
function readClass(source: string, open: number): { chars: string[]; end: number } {
  let i = open + 1;
  const negated = source[i] === '!' || source[i] === '^';
  if (negated) i++;
  const first = i;
  const ranges: [number, number][] = [];
  while (i < source.length && !(source[i] === ']' && i > first)) {
    const lo = source.charCodeAt(i);
    if (source[i + 1] === '-' && i + 2 < source.length && source[i + 2] !== ']') {
      ranges.push([lo, source.charCodeAt(i + 2)]);
      i += 3;
    } else {
      ranges.push([lo, lo]);
      i++;
    }
  }
  const inClass = (c: string): boolean => ranges.some(([lo, hi]) => c.charCodeAt(0) >= lo && c.charCodeAt(0) <= hi);
  return { chars: NAME_CHARS.filter((c) => inClass(c) !== negated), end: i + 1 };
}

/** The shortest name a glob writes: `*` as nothing, `?` and classes as their first character. */
function shortestName(source: string): string | null {
  let out = '';
  let i = 0;
  while (i < source.length) {
    const ch = source[i]!;
    if (ch === '*') i++;
    else if (ch === '?') {
      out += NAME_CHARS[0];
      i++;
    } else if (ch === '[') {
      const { chars, end } = readClass(source, i);
      if (chars.length === 0) return null;
      out += chars[0];
      i = end;
    } else {
      out += ch;
      i++;
    }
  }
  return out;
}

export interface NameSample {
  /** Globs to write names from (the catalogue entry's, and any selector's that could narrow it). */
  readonly from: readonly Glob[];
  /** Names to consider as they are (a selector that names one tool). */
  readonly literals: readonly string[];
  /** Whether a name is wanted: it matches the entry and the selectors, and the entry describes it. */
  readonly keep: (name: string) => boolean;
  readonly seed: number;
  readonly count: number;
}

/**
 * Up to `count` distinct names the service accepts and `keep` wants, shortest first (the first is
 * what a counterexample shrinks to): the literals, each glob's shortest name, then generated ones.
 * Deterministic for a seed.
 */
export function sampleToolNames(sample: NameSample): string[] {
  const candidates: string[] = [...sample.literals];
  for (const glob of sample.from) {
    const shortest = shortestName(glob.source);
    if (shortest !== null) candidates.push(shortest);
  }
  for (const glob of sample.from) {
    const arb = globNameArbitrary(glob.source);
    if (arb) candidates.push(...fc.sample(arb, { seed: sample.seed, numRuns: 8 * sample.count }));
  }
  const out: string[] = [];
  for (const name of candidates) {
    if (out.length >= sample.count) break;
    if (!out.includes(name) && TOOL_NAME.test(name) && sample.keep(name)) out.push(name);
  }
  return out.sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
}
