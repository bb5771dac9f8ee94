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
    expect(d.spans(attack)).toEqual([]);
    expect(d.first('a'.repeat(1 << 20))).toBe('evil');
    expect(d.spans('a'.repeat(1 << 20))).toEqual([{ type: 'evil', start: 0, end: 1 << 20 }]);
  });

  it('places the findings in 1 MiB adversarial texts exactly', () => {
    const MiB = 1 << 20;
    // Only the run of `a` that reaches the end matches `$`.
    expect(detector([['evil', '(a+)+$']]).spans(`${'a'.repeat(MiB)}!aa`)).toEqual([
      { type: 'evil', start: MiB + 1, end: MiB + 3 },
    ]);
    // A match that could start anywhere but ends only at the last character: all of it.
    expect(detector([['evil', '(a|aa)+b']]).spans(`${'a'.repeat(MiB)}b`)).toEqual([
      { type: 'evil', start: 0, end: MiB + 1 },
    ]);
    // Many short matches, each of which a leftmost-first search finds only at the end of the text
    // (the first alternative might still match there): one span each, no rescanning.
    const many = 'ab '.repeat(MiB / 4);
    const spans = detector([['t', 'a[a-z ]*!|ab']]).spans(many);
    expect(spans).toHaveLength(MiB / 4);
    expect(spans[1]).toEqual({ type: 't', start: 3, end: 5 });
    expect(spans.at(-1)).toEqual({ type: 't', start: many.length - 3, end: many.length - 1 });
  });

  it('covers every character inside a match, where one leftmost match would leave a matching text', () => {
    const d = detector([['code', 'a[0-9]{3}|[0-9]{3}b']]);
    expect(d.spans('a123b')).toEqual([{ type: 'code', start: 0, end: 5 }]);
    // Matches that touch are one finding.
    expect(detector([['t', 'TCK-[0-9]']]).spans('TCK-1TCK-2 TCK-')).toEqual([{ type: 't', start: 0, end: 10 }]);
  });

  it('still finds every match where the automata outgrow their bound', () => {
    const d = detector([['blowup', '[ab]*a[ab]{14}']]);
    let seed = 11;
    const text = Array.from({ length: 100_000 }, () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return (seed >> 16) % 2 === 0 ? 'a' : 'b';
    }).join('');
    const spans = d.spans(`${text}!!${'b'.repeat(20)}`);
    expect(spans).toHaveLength(1);
    expect(spans[0]!.start).toBe(0);
    expect(text.slice(spans[0]!.end - 15, spans[0]!.end).startsWith('a')).toBe(true);
  });
});
