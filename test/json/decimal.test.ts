import { describe, expect, it } from 'vitest';
import { compareDecimals, decimalAt, decimalOf, integerDigits, type Decimal } from '../../src/json/decimal.js';
import { parseJson } from '../../src/json/parse.js';
import type { JsonObject } from '../../src/json/value.js';

const dec = (lexeme: string): Decimal => {
  const d = decimalOf(lexeme);
  if (d === null) throw new Error(`no decimal for ${lexeme}`);
  return d;
};
const cmp = (a: string, b: string): number => compareDecimals(dec(a), dec(b));

describe('decimalOf', () => {
  it('normalizes every spelling of one value to one form', () => {
    const forms = [
      '4111111111111111',
      '4111111111111111.0',
      '4.111111111111111e15',
      '4111111111111111E0',
      '0.4111111111111111e+16',
      '00004111111111111111.000',
      '41111111111111110e-1',
    ];
    for (const f of forms)
      expect(decimalOf(f), f).toEqual({ negative: false, digits: '4111111111111111', exponent: 16 });
  });

  it('reads zero, -0 and zeros with any exponent as zero', () => {
    for (const f of ['0', '-0', '0.000', '0e99999999999999999999', '-0.0E-5'])
      expect(decimalOf(f), f).toEqual({ negative: false, digits: '', exponent: 0 });
  });

  it('keeps negative values and small fractions exact', () => {
    expect(decimalOf('-12.50')).toEqual({ negative: true, digits: '125', exponent: 2 });
    expect(decimalOf('0.000123')).toEqual({ negative: false, digits: '123', exponent: -3 });
    expect(decimalOf('2e-324')).toEqual({ negative: false, digits: '2', exponent: -323 });
  });

  it('refuses what is not a lexeme, and exponents too long to compare', () => {
    for (const f of ['', '-', '1.', '.5', '1e', '+1', 'NaN', 'Infinity', '0x10', '1_000', ' 1'])
      expect(decimalOf(f), f).toBeNull();
    expect(decimalOf('1e1234567890123456')).toBeNull();
    expect(decimalOf('1e123456789012345')).not.toBeNull();
  });
});

describe('compareDecimals', () => {
  it('orders integers beyond 2^53 exactly', () => {
    expect(cmp('1234567890123456800', '1234567890123456789')).toBe(1);
    expect(cmp('1234567890123456789', '1234567890123456789')).toBe(0);
    expect(cmp('9007199254740993', '9007199254740992')).toBe(1);
    expect(cmp('1000000000000000064', '1e18')).toBe(1);
  });

  it('orders signs, magnitudes and fractions', () => {
    const sorted = [
      '-1e3',
      '-100.5',
      '-100',
      '-0.5',
      '0',
      '2e-324',
      '0.15',
      '0.151',
      '0.2',
      '1',
      '1.5',
      '15',
      '100',
      '1e21',
    ];
    for (let i = 0; i < sorted.length; i++) {
      for (let j = 0; j < sorted.length; j++)
        expect(cmp(sorted[i]!, sorted[j]!), `${sorted[i]} vs ${sorted[j]}`).toBe(Math.sign(i - j));
    }
  });

  it('calls equal what is the same value written differently', () => {
    expect(cmp('100', '1e2')).toBe(0);
    expect(cmp('100', '100.000')).toBe(0);
    expect(cmp('-0', '0')).toBe(0);
  });

  it('agrees with double comparison wherever doubles are exact', () => {
    const values = [0, 1, -1, 0.5, 0.25, 3, 1024, -7.75, 1e21, 1e-7, 123456789, 2 ** 53];
    for (const a of values)
      for (const b of values) expect(cmp(String(a), String(b)), `${a} vs ${b}`).toBe(Math.sign(a - b));
  });
});

describe('decimalAt', () => {
  it('reads a parsed number through its lexeme', () => {
    const doc = parseJson('{"id":1234567890123456800,"n":5,"f":1.0}') as JsonObject;
    expect(decimalAt(doc, 'id', doc.id as number)).toEqual(dec('1234567890123456800'));
    expect(decimalAt(doc, 'n', 5)).toEqual(dec('5'));
    expect(decimalAt(doc, 'f', 1)).toEqual(dec('1'));
  });
});

describe('integerDigits', () => {
  it('writes integral values out, bounded', () => {
    expect(integerDigits(dec('4.111111111111111e15'), 19)).toBe('4111111111111111');
    expect(integerDigits(dec('12e3'), 19)).toBe('12000');
    expect(integerDigits(dec('0'), 19)).toBe('0');
    expect(integerDigits(dec('1.5'), 19)).toBeNull();
    expect(integerDigits(dec('1e20'), 19)).toBeNull();
  });
});
