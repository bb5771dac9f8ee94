// Where an RE2 program's matches lie (src/policy/guards/cover.ts): every character inside some match
// and no other, checked against an oracle that tries every [start, end) of small texts with
// JavaScript's own (backtracking) engine, on generated patterns of the syntax both engines read alike.
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { type CoverBounds, createCover, type Cover, type Prog } from '../../../src/policy/guards/cover.js';
import { runs } from '../../helpers/runs.js';

function coverOf(regex: string, bounds?: CoverBounds): Cover {
  const cover = createCover((RE2JS.compile(regex).re2() as unknown as { prog: Prog }).prog, bounds);
  if (cover === null) throw new Error(`no cover for ${regex}`);
  return cover;
}

/** The covered runs by brute force: each [s, e) tested with a lookbehind pinning the end (JavaScript backtracks through every path). */
function oracle(regex: string, s: string): [number, number][] {
  const covered = new Array<boolean>(s.length).fill(false);
  for (let e = 1; e <= s.length; e++) {
    const re = new RegExp(`(?:${regex})(?<=^[\\s\\S]{${e}})`, 'y');
    for (let start = 0; start < e; start++) {
      re.lastIndex = start;
      if (re.test(s)) for (let i = start; i < e; i++) covered[i] = true;
    }
  }
  const out: [number, number][] = [];
  covered.forEach((c, i) => {
    if (!c) return;
    const last = out.at(-1);
    if (last !== undefined && last[1] === i) last[1] = i + 1;
    else out.push([i, i + 1]);
  });
  return out;
}

// Patterns both engines read the same way: no `(?i)`, `.` never meets `\r` or U+2028 in these texts.
const atom = fc.constantFrom('a', 'b', '[ab]', '.', '[^a]', 'ab', 'x');
const anchor = fc.constantFrom('^', '$', '\\b', '\\B');
const regexArb: fc.Arbitrary<string> = fc.letrec<{ re: string }>((tie) => ({
  re: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    atom,
    anchor,
    fc.tuple(tie('re'), tie('re')).map(([x, y]) => `${x}${y}`),
    fc.tuple(tie('re'), tie('re')).map(([x, y]) => `(?:${x}|${y})`),
    fc.tuple(tie('re'), fc.constantFrom('*', '+', '?', '{2}', '{1,3}')).map(([x, q]) => `(${x})${q}`),
  ),
})).re;
const textArb = fc.string({ unit: fc.constantFrom('a', 'b', 'x', ' ', '\n'), maxLength: 9 });

describe('createCover', () => {
  it('covers exactly the characters inside some match, whatever the pattern', () => {
    fc.assert(
      fc.property(regexArb, textArb, (regex, s) => {
        expect(coverOf(regex)(s), `${regex} on ${JSON.stringify(s)}`).toEqual(oracle(regex, s));
      }),
      { numRuns: runs(2000), seed: 27 },
    );
  });

  it('covers the same when its automata are dropped and rebuilt along the way (tiny bounds, tiny segments)', () => {
    const unit = fc.constantFrom('a', 'b', 'x', ' ', '\n', '😀');
    fc.assert(
      fc.property(regexArb, fc.string({ unit, minLength: 20, maxLength: 80, size: 'max' }), (regex, s) => {
        const got = coverOf(regex, { states: 5, segment: 1 })(s);
        expect(got, `${regex} on ${JSON.stringify(s)}`).toEqual(coverOf(regex)(s));
        // The oracle reads code units (no `u` flag: its lookbehind counts units), RE2 code points.
        if (s.length <= 24 && !s.includes('😀'))
          expect(got, `${regex} on ${JSON.stringify(s)}`).toEqual(oracle(regex, s));
      }),
      { numRuns: runs(1000), seed: 2027 },
    );
  });

  it('finds a match only where its assertions hold, on either side of the text', () => {
    expect(coverOf('(a+)+$')('aa!aaa')).toEqual([[3, 6]]);
    expect(coverOf('^a+')('aa!aaa')).toEqual([[0, 2]]);
    expect(coverOf('\\bab\\b')('ab xab ab')).toEqual([
      [0, 2],
      [7, 9],
    ]);
    expect(coverOf('(?m)^b$')('a\nb\nbb')).toEqual([[2, 3]]);
  });

  it('joins overlapping and adjacent matches, and leaves the rest', () => {
    expect(coverOf('a[0-9]{3}|[0-9]{3}b')('a123b a12 99b')).toEqual([[0, 5]]);
    expect(coverOf('TCK-[0-9]')('TCK-1TCK-2 TCK-')).toEqual([[0, 10]]);
  });

  it('reads a surrogate pair as one character, places in UTF-16 code units', () => {
    const s = 'é😀 x😀😀y';
    const [run] = coverOf('x.+y')(s) ?? [];
    expect(s.slice(run![0], run![1])).toBe('x😀😀y');
    expect(coverOf('😀')(s)).toEqual([
      [1, 3],
      [5, 9],
    ]);
  });

  it('answers [] for a text without a match, and the whole cover past its bound (2^15 states)', () => {
    const blowup = coverOf('[ab]*a[ab]{14}');
    expect(blowup('b'.repeat(20))).toEqual([]);
    let seed = 7;
    const random = Array.from({ length: 60_000 }, () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return (seed >> 16) % 2 === 0 ? 'a' : 'b'; // a high bit: the low one alternates
    }).join('');
    // Any start, so everything up to the last end: 15 characters from the last `a` that has them.
    const lastEnd = random.slice(0, -14).lastIndexOf('a') + 15;
    expect(blowup(`${random}!${'b'.repeat(20)}`)).toEqual([[0, lastEnd]]);
    expect(blowup(`x${'a'.repeat(15)}`)).toEqual([[1, 16]]);
  });

  it('refuses a program it does not know, and bounds that cannot hold a segment', () => {
    expect(createCover({ inst: [{ op: 99, out: 0, arg: 0, matchRune: () => false }], start: 0 })).toBeNull();
    expect(() => coverOf('a', { states: 8, segment: 5 })).toThrow(RangeError);
  });
});
