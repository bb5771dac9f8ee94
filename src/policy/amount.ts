// Exact non-negative amounts for budgets (docs/spec.md section 2.9): a call's `sum` value, a budget's
// `max`, a counter's standing. Counted as decimals, never as doubles: ten refunds of 0.1 make exactly
// 1, and a counter never drifts past its maximum by a rounding. The database holds them as `numeric`;
// this module reads them from JSON and does the little arithmetic the policy tests need.
import { compareDecimals, decimalAt, decimalOf, type Decimal } from '../json/decimal.js';
import { numberLexeme } from '../json/value.js';
import type { Amount } from './model.js';

/**
 * The amount a number of a parsed document stands for: null unless it is ≥ 0 and the number as
 * written is the double a tool reads (docs/spec.md section 3.5: where the two readings disagree, the
 * value is undecidable). `1234567890123456789` is refused; `100.50` and `1e2` are fine.
 */
export function amountAt(container: object, key: string | number, value: number): Amount | null {
  if (!Number.isFinite(value) || value < 0) return null;
  const written = decimalAt(container, key, value);
  const held = decimalOf(String(value));
  if (written === null || held === null || written.negative || compareDecimals(written, held) !== 0) return null;
  return { text: plainText(written), value, written: numberLexeme(container, key) ?? String(value) };
}

/** The most digits after the decimal point a spend report (POST /usage) and USAGE_MAX_USD may have: a picodollar. */
export const REPORT_DECIMALS = 12;

/**
 * The spend a report carries (POST /usage `usd`), from the number as written: a finite decimal above
 * 0, at most `cap`, with at most REPORT_DECIMALS digits after the point, and written as the double a
 * reader of the body holds (as amountAt). Otherwise the rule it breaks, worded as a problem's
 * message (never the value). The cap is checked before the rest, so `1e308` is "above the cap".
 */
export function reportedSpend(
  container: object,
  key: string | number,
  value: number,
  cap: Amount,
): { amount: Amount } | { rule: string } {
  const written = Number.isFinite(value) ? decimalAt(container, key, value) : null;
  if (written === null) return { rule: 'must be a finite decimal number' };
  if (written.negative || written.digits === '') return { rule: 'must be greater than 0' };
  const max = decimalOf(cap.text);
  if (max === null || compareDecimals(written, max) > 0) return { rule: `must be at most ${cap.text} (USAGE_MAX_USD)` };
  if (written.digits.length - written.exponent > REPORT_DECIMALS)
    return { rule: `must have at most ${REPORT_DECIMALS} digits after the decimal point` };
  const amount = amountAt(container, key, value);
  if (amount === null) return { rule: 'must be written as a double holds it (not exact)' };
  return { amount };
}

/** An amount from decimal text (a counter as the database returns it); null when it is not one, or negative. */
export function amountOfText(text: string): Amount | null {
  const d = decimalOf(text);
  if (d === null || d.negative) return null;
  const plain = plainText(d);
  return { text: plain, value: Number(plain), written: plain };
}

export const ZERO: Amount = Object.freeze({ text: '0', value: 0, written: '0' });
export const ONE: Amount = Object.freeze({ text: '1', value: 1, written: '1' });

/** a + b, exactly, as decimal text. */
export function addAmounts(a: Amount, b: Amount): Amount {
  const x = scaled(a.text);
  const y = scaled(b.text);
  const scale = Math.min(x.scale, y.scale);
  const sum = x.coefficient * 10n ** BigInt(x.scale - scale) + y.coefficient * 10n ** BigInt(y.scale - scale);
  return amountOfText(fromScaled(sum, scale)) ?? ZERO; // a sum of two non-negative decimals is one
}

/** -1, 0 or 1 as a is less than, equal to or greater than b. */
export function compareAmounts(a: Amount, b: Amount): -1 | 0 | 1 {
  const x = decimalOf(a.text);
  const y = decimalOf(b.text);
  if (x === null || y === null) throw new RangeError('not an amount');
  return compareDecimals(x, y);
}

/** The decimal in plain notation (`1005`, `0.001`), no exponent: what `numeric` and people read. */
function plainText(d: Decimal): string {
  if (d.digits === '') return '0';
  const n = d.digits.length;
  if (d.exponent >= n) return d.digits + '0'.repeat(d.exponent - n);
  if (d.exponent > 0) return `${d.digits.slice(0, d.exponent)}.${d.digits.slice(d.exponent)}`;
  return `0.${'0'.repeat(-d.exponent)}${d.digits}`;
}

/** value = coefficient × 10^scale. */
function scaled(text: string): { coefficient: bigint; scale: number } {
  const d = decimalOf(text);
  if (d === null || d.digits === '') return { coefficient: 0n, scale: 0 };
  return { coefficient: BigInt(d.digits), scale: d.exponent - d.digits.length };
}

function fromScaled(coefficient: bigint, scale: number): string {
  if (coefficient === 0n) return '0';
  return scale >= 0 ? `${coefficient}e${scale}` : `${coefficient}e-${-scale}`;
}
