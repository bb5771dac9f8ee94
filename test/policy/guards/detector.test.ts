import { describe, expect, it } from 'vitest';
import { detectIn, type Detector } from '../../../src/policy/guards/detector.js';

const seen: string[] = [];
const spy = <K extends string>(kind: K, test: (s: string) => boolean): Detector<K> => ({
  kind,
  text: kind,
  test: (s) => {
    seen.push(`${kind}:${s}`);
    return test(s);
  },
});

describe('detectIn: a guard’s detectors as one test of a text', () => {
  const a = spy('a', (s) => s.includes('AA'));
  const b = spy('b', (s) => s.includes('B'));
  const detect = detectIn<'a' | 'b'>([a, b]);

  it('answers the first detector that fires, or null', () => {
    expect(detect('xx AA B')).toBe('a');
    expect(detect('xx B')).toBe('b');
    expect(detect('nothing')).toBeNull();
  });

  it('reads an ASCII text once, and a text outside ASCII again folded, keeping the more specific kind', () => {
    seen.length = 0;
    expect(detect('plain B')).toBe('b');
    expect(seen).toEqual(['a:plain B', 'b:plain B']); // no fold for ASCII
    expect(detect('B \uff21\uff21')).toBe('a'); // full-width AA folds to AA: a is listed first
    expect(detect('A\u200bA')).toBe('a');
    seen.length = 0;
    expect(detect('AA \u00e9')).toBe('a');
    expect(seen).toEqual(['a:AA \u00e9']); // the first detector's finding needs no second look
  });
});

describe('detectIn over any number of detectors', () => {
  // One detector per letter: the first listed whose letter the text holds answers.
  const letters = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'];
  const detectors = letters.map((l) => ({ kind: l, text: l, test: (s: string) => s.includes(l) }));

  it.each([0, 1, 2, 3, 4, 5, 8, 9])('with %i detectors, answers the first that fires', (n) => {
    const detect = detectIn(detectors.slice(0, n));
    for (let k = 0; k < n; k++) {
      expect(detect(letters.slice(k).join(''))).toBe(letters[k]);
      expect(detect(`x${letters[k]}`)).toBe(letters[k]);
    }
    expect(detect('xyz')).toBeNull();
  });
});
