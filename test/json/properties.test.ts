import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../src/json/canonical.js';
import { JsonParseError, parseJson } from '../../src/json/parse.js';
import { numberLexeme } from '../../src/json/value.js';
import type { JsonValue } from '../../src/json/value.js';
import { referenceCanonical, sameJson, sameJsonUnordered, utf8 } from './helpers.js';
import { runs } from '../helpers/runs.js';

// Strings of any UTF-16 code units, so lone surrogates are generated too.
const anyCodeUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) });
const wellFormed = (s: string): boolean =>
  !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
const json = fc.jsonValue({ stringUnit: 'binary', maxDepth: 6 });

function attempt(f: () => unknown): { ok: true; value: unknown } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: f() };
  } catch (error) {
    return { ok: false, error };
  }
}

describe('parseJson agrees with JSON.parse on valid JSON', () => {
  it('parses JSON.stringify output (compact and indented) to the same value', () => {
    fc.assert(
      fc.property(json, (v) => {
        for (const text of [JSON.stringify(v), JSON.stringify(v, null, 2), JSON.stringify(v, null, '\t')]) {
          expect(sameJson(parseJson(text), JSON.parse(text))).toBe(true);
          expect(sameJson(parseJson(utf8(text)), JSON.parse(text))).toBe(true);
        }
      }),
      { numRuns: runs(300) },
    );
  });

  it('parses strings of any code units, rejecting exactly the ones with lone surrogates', () => {
    fc.assert(
      fc.property(anyCodeUnits, (s) => {
        for (const text of [JSON.stringify(s), JSON.stringify({ [s]: [s] })]) {
          const r = attempt(() => parseJson(text));
          if (wellFormed(s)) {
            expect(r.ok).toBe(true);
            if (r.ok) expect(sameJson(r.value, JSON.parse(text))).toBe(true);
          } else {
            expect(r.ok).toBe(false);
            if (!r.ok) expect((r.error as JsonParseError).code).toBe('lone_surrogate');
          }
        }
      }),
      { numRuns: runs(500) },
    );
  });

  it('never accepts what JSON.parse rejects, and agrees when both accept (token soup)', () => {
    const token = fc.constantFrom(
      '{',
      '}',
      '[',
      ']',
      ',',
      ':',
      ' ',
      '\t',
      '\n',
      '"a"',
      '"b"',
      '"\\u0061"',
      '"\\ud800"',
      '"\\ud83d\\ude00"',
      '1',
      '-',
      '0',
      '.',
      'e',
      '+',
      '1.0',
      '1e400',
      'true',
      'null',
      '"',
      '\\',
      '/',
      'x',
      '\u00a0',
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 14 }), (tokens) => {
        const text = tokens.join('');
        const mine = attempt(() => parseJson(text));
        const theirs = attempt(() => JSON.parse(text) as unknown);
        if (!mine.ok) expect(mine.error).toBeInstanceOf(JsonParseError);
        if (!theirs.ok) expect(mine.ok).toBe(false);
        if (mine.ok && theirs.ok) expect(sameJson(mine.value, theirs.value)).toBe(true);
        if (!mine.ok && theirs.ok) {
          // Valid JSON that is not I-JSON, or nothing at all.
          expect(['duplicate_key', 'lone_surrogate', 'number_out_of_range']).toContain(
            (mine.error as JsonParseError).code,
          );
        }
      }),
      { numRuns: runs(3000) },
    );
  });
});

describe('UTF-8 validation', () => {
  it('fails with invalid_utf8 exactly when the bytes are not UTF-8, at the first bad sequence', () => {
    const byte = fc.oneof(
      fc.integer({ min: 0, max: 255 }),
      fc.constantFrom(0x22, 0x22, 0x61, 0x80, 0xbf, 0xc2, 0xe0, 0xed, 0xf0, 0xf4, 0xa0, 0x90, 0x8f),
    );
    fc.assert(
      fc.property(fc.array(byte, { maxLength: 12 }), (list) => {
        const bytes = new Uint8Array([0x22, ...list, 0x22]);
        const r = attempt(() => parseJson(bytes));
        if (!r.ok) expect(r.error).toBeInstanceOf(JsonParseError);
        const invalid = !r.ok && (r.error as JsonParseError).code === 'invalid_utf8';
        expect(invalid).toBe(!isUtf8(bytes));
        if (invalid) {
          const offset = (r.error as JsonParseError).offset;
          expect(isUtf8(bytes.subarray(0, offset))).toBe(true);
          for (let k = 1; k <= 4; k++) expect(isUtf8(bytes.subarray(offset, offset + k))).toBe(false);
        }
      }),
      { numRuns: runs(3000) },
    );
  });
});

describe('numbers are kept as written', () => {
  const digits = (min: number, max: number) =>
    fc.string({ unit: fc.constantFrom(...'0123456789'.split('')), minLength: min, maxLength: max });
  const lexeme = fc
    .tuple(
      fc.boolean(),
      fc.oneof(
        fc.constant('0'),
        fc.tuple(fc.constantFrom(...'123456789'.split('')), digits(0, 24)).map(([a, b]) => a + b),
      ),
      fc.option(digits(1, 20)),
      fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(1, 3))),
    )
    .map(
      ([neg, int, frac, exp]) =>
        (neg ? '-' : '') + int + (frac === null ? '' : '.' + frac) + (exp === null ? '' : exp.join('')),
    );

  it('parses to Number(lexeme), records the lexeme when needed and canonicalizes to the lexeme', () => {
    fc.assert(
      fc.property(lexeme, (lex) => {
        const n = Number(lex);
        const r = attempt(() => parseJson(`[${lex}]`));
        if (!Number.isFinite(n)) {
          expect(r.ok).toBe(false);
          if (!r.ok) expect((r.error as JsonParseError).code).toBe('number_out_of_range');
          return;
        }
        expect(r.ok).toBe(true);
        if (!r.ok) return;
        const arr = r.value as JsonValue[];
        expect(Object.is(arr[0], n)).toBe(true);
        expect(numberLexeme(arr, 0)).toBe(String(n) === lex ? undefined : lex);
        expect(canonicalize(arr)).toBe(`[${lex}]`);
      }),
      { numRuns: runs(3000) },
    );
  });
});

describe('canonical form', () => {
  it('is idempotent, valid JSON, equal in value, and matches the reference canonicalizer', () => {
    fc.assert(
      fc.property(json, (v) => {
        const text = JSON.stringify(v, null, 1);
        const c1 = canonicalize(parseJson(text));
        expect(canonicalize(parseJson(c1))).toBe(c1);
        expect(sameJsonUnordered(JSON.parse(c1), JSON.parse(text))).toBe(true);
        expect(c1).toBe(referenceCanonical(text));
      }),
      { numRuns: runs(300) },
    );
  });

  it('does not depend on key order or whitespace', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ unit: 'binary' }), json, { maxKeys: 8 }), (o) => {
        const reversed = Object.fromEntries(Object.entries(o).reverse());
        expect(canonicalize(parseJson(JSON.stringify(reversed, null, 3)))).toBe(
          canonicalize(parseJson(JSON.stringify(o))),
        );
      }),
      { numRuns: runs(200) },
    );
  });
});
