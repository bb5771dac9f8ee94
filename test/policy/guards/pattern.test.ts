// The pattern guard's detector (src/policy/guards/pattern.ts): RE2 patterns compiled once, refused
// when they are not RE2 or can match an empty text, the first pattern in the list naming a finding,
// overlapping matches merged, and time linear in the text on patterns a backtracking engine cannot run.
import { describe, expect, it } from 'vitest';
import { compilePatterns } from '../../../src/policy/guards/pattern.js';
import type { TextDetector } from '../../../src/policy/guards/detector.js';

function detector(patterns: [string, string][]): TextDetector {
  const d = compilePatterns(patterns.map(([name, regex]) => ({ name, regex })));
  if ('problems' in d) throw new Error(JSON.stringify(d.problems));
  return d;
}

describe('compilePatterns', () => {
  it('refuses what is not RE2, naming the pattern by its index', () => {
    const got = compilePatterns([
      { name: 'ok', regex: 'TCK-[0-9]+' },
      { name: 'backref', regex: '(a)\\1' },
      { name: 'ahead', regex: 'a(?=b)' },
      { name: 'behind', regex: '(?<=a)b' },
      { name: 'range', regex: '[z-a]' },
    ]);
    expect('problems' in got && got.problems.map((p) => p.index)).toEqual([1, 2, 3, 4]);
  });

  it('refuses a pattern that can match an empty text, and keeps those that cannot', () => {
    for (const regex of ['x*', 'a?', '\\b', '^', '$', 'a|', '(?:)', '(a*)*', '\\bfoo|\\B'])
      expect('problems' in compilePatterns([{ name: 'e', regex }]), regex).toBe(true);
    for (const regex of ['x+', '(a+)+$', '^a', 'a\\b', '(?i)room [a-z][0-9]{3}', '[0-9]{6}'])
      expect('problems' in compilePatterns([{ name: 'e', regex }]), regex).toBe(false);
  });
});

describe('the detector', () => {
  it('names a finding by the first pattern in the list that matches', () => {
    const d = detector([
      ['ticket', 'TCK-[0-9]+'],
      ['any', '[A-Z]{3}-[0-9]+'],
    ]);
    expect(d.first('see TCK-12')).toBe('ticket');
    expect(d.first('see ABC-12')).toBe('any');
    expect(d.first('nothing')).toBeNull();
    expect(d.text('ticket')).toBe('text matching pattern "ticket"');
  });

  it('gives every match’s place, overlapping ones merged under the earlier pattern', () => {
    const d = detector([
      ['long', 'abc-[0-9]+'],
      ['digits', '[0-9]{2,}'],
    ]);
    expect(d.spans('x abc-123 y 45 z')).toEqual([
      { type: 'long', start: 2, end: 9 },
      { type: 'digits', start: 12, end: 14 },
    ]);
  });

  it('reads places in UTF-16 code units, as JavaScript strings do', () => {
    const d = detector([['t', 'TCK-[0-9]+']]);
    const s = 'é😀 TCK-12';
    const [span] = d.spans(s);
    expect(s.slice(span!.start, span!.end)).toBe('TCK-12');
  });

  it('also reads the text folded (full-width digits)', () => {
    expect(detector([['t', 'TCK-[0-9]+']]).first('TCK-１２')).toBe('t');
  });

  it('completes on 1 MiB built to make a backtracking engine take exponential time', () => {
    const d = detector([['evil', '(a+)+$']]);
    const attack = `${'a'.repeat(1 << 20)}!`;
    expect(d.first(attack)).toBeNull();
    expect(d.first('a'.repeat(1 << 20))).toBe('evil');
    expect(d.spans('a'.repeat(1 << 16))).toEqual([{ type: 'evil', start: 0, end: 1 << 16 }]);
  });
});
