// The walk with detectors made up for the test: what a new detector gets from it without any code
// of its own (document order, keys, pointers, folding, numbers only when it reads them).
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../../src/json/parse.js';
import type { JsonObject } from '../../../src/json/value.js';
import type { Detector } from '../../../src/policy/guards/detector.js';
import { createScan } from '../../../src/policy/guards/walk.js';

/** Finds the ASCII word `secret`. */
const word: Detector<'word'> = { kind: 'word', text: 'the word', test: (s) => s.includes('secret') };
/** Finds a run of 12 equal digits, also in numbers. */
const twelve: Detector<'twelve'> = {
  kind: 'twelve',
  text: 'twelve digits',
  test: (s) => /(\d)\1{11}/.test(s),
  numberDigits: { min: 12, max: 12 },
};

const parsed = (text: string) => parseJson(Buffer.from(text)) as JsonObject;

describe('createScan: one walk over the arguments for any detectors', () => {
  it('reports the first finding in document order, keys before values, with its pointer', () => {
    const scan = createScan([word]);
    expect(scan({ a: 'x', b: ['y', { 'c/d': 'a secret' }] })).toEqual({ path: '/b/1/c~1d', kind: 'word' });
    expect(scan({ a: { 'the secret': 1 }, b: 'secret' })).toEqual({ path: '/a', kind: 'word', inKey: true });
    expect(scan({ a: 'nothing', b: [true, null, 3] })).toBeNull();
  });

  it('runs the detectors in the order given: the earlier one wins in the same text', () => {
    const both = { t: 'secret 111111111111' };
    expect(createScan<'word' | 'twelve'>([word, twelve])(both)?.kind).toBe('word');
    expect(createScan<'word' | 'twelve'>([twelve, word])(both)?.kind).toBe('twelve');
  });

  it('also scans a text with look-alikes folded (NFKC, invisible characters removed)', () => {
    const scan = createScan([word]);
    expect(scan({ t: 'se\u200bcret' })).toEqual({ path: '/t', kind: 'word' });
    expect(scan({ t: '\uff53\uff45\uff43\uff52\uff45\uff54' })).toEqual({ path: '/t', kind: 'word' }); // full-width
  });

  it('scans numbers only for detectors that read them, as written and as their integer', () => {
    expect(createScan([word])(parsed('{"n": 111111111111}'))).toBeNull();
    const scan = createScan([twelve]);
    expect(scan(parsed('{"n": 111111111111}'))).toEqual({ path: '/n', kind: 'twelve' });
    expect(scan(parsed('{"n": [0, 1.11111111111e11]}'))).toEqual({ path: '/n/1', kind: 'twelve' });
    expect(scan(parsed('{"n": 111111111111.000}'))).toEqual({ path: '/n', kind: 'twelve' });
    expect(scan({ n: 11111111111 })).toBeNull(); // eleven digits
  });

  it('walks 10,000 levels deep without recursion', () => {
    let deep: JsonObject = { t: 'a secret' };
    for (let i = 0; i < 10_000; i++) deep = { d: deep };
    expect(createScan([word])(deep)?.path).toBe(`${'/d'.repeat(10_000)}/t`);
  });
});
