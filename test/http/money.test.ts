// The operator page's money formatter (src/http/ui/money.js), run in Node exactly as the browser
// loads it: every written digit kept, digits grouped by the locale, the currency after the amount.
import { readFileSync } from 'node:fs';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { runs } from '../helpers/runs.js';

const MONEY_JS = readFileSync(new URL('../../src/http/ui/money.js', import.meta.url), 'utf8');
const formatMoney = (lexeme: string, currency: string, locale?: string): string =>
  runInNewContext(`${MONEY_JS}\nformatMoney(lexeme, currency, locale)`, { lexeme, currency, locale }) as string;

describe('formatMoney', () => {
  it.each([
    ['1234567.8915', '1,234,567.8915 EUR'],
    ['0', '0 EUR'],
    ['0.5', '0.5 EUR'],
    ['120.50', '120.50 EUR'], // a trailing zero written is a digit kept
    ['999', '999 EUR'],
    ['1000', '1,000 EUR'],
    ['-10000', '-10,000 EUR'],
    ['12345678901234567890', '12,345,678,901,234,567,890 EUR'], // beyond a double
    ['10000.000000000000000001', '10,000.000000000000000001 EUR'], // beyond a double's fraction
    ['1e3', '1,000 EUR'],
    ['1.5E6', '1,500,000 EUR'],
    ['1.2345e2', '123.45 EUR'],
    ['12.5e-3', '0.0125 EUR'],
    ['-1e-2', '-0.01 EUR'],
    ['1e400', '1e400 EUR'], // too far to expand: as written
    ['12a', '12a EUR'], // not a number: as written
  ])('%s → %s (en-US)', (lexeme, shown) => {
    expect(formatMoney(lexeme, 'EUR', 'en-US')).toBe(shown);
  });

  it("groups by the locale's convention, with Latin digits, keeping every digit", () => {
    expect(formatMoney('1234567.8915', 'EUR', 'de-DE')).toBe('1.234.567,8915 EUR');
    expect(formatMoney('1234567.8915', 'INR', 'en-IN')).toBe('12,34,567.8915 INR');
    expect(formatMoney('1234567.8915', 'EGP', 'ar-EG')).toMatch(/^1.234.567.8915 EGP$/);
    expect(formatMoney('12345678901234567890.123456789', 'USD', 'fr-FR').replace(/\s/g, ' ')).toBe(
      '12 345 678 901 234 567 890,123456789 USD',
    );
  });

  it('every digit written is a digit shown, for any decimal text', () => {
    for (let n = 0; n < runs(2000); n++) {
      const int = String(Math.floor(Math.random() * 1e9)) + String(n);
      const frac = n % 3 === 0 ? '' : String(Math.floor(Math.random() * 1e12)).padStart(n % 20, '0');
      const lexeme = `${int}${frac ? `.${frac}` : ''}`;
      const shown = formatMoney(lexeme, 'EUR', 'en-US');
      expect(shown.replace(/[^0-9]/g, '')).toBe(lexeme.replace(/[^0-9]/g, ''));
      expect(shown.endsWith(' EUR')).toBe(true);
    }
  });
});
