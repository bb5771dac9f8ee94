// The exact value of a JSON number as written. A JS number holds 53 bits: 9007199254740993 reads as
// 9007199254740992 and 1234567890123456800 as 1234567890123456789, so a comparison of doubles can
// let an id through an allow-list it is not on. So conditions also compare an argument's number as
// written (its lexeme, docs/spec.md section 4: numbers as written), and the pii guard reads its digits from it.
//
// A lexeme is read as sign × 0.DIGITS × 10^EXPONENT with no leading or trailing zero in DIGITS, so
// two numbers are equal exactly when their forms are, and ordering needs no arithmetic on the value.
import { numberLexeme } from './value.js';

export interface Decimal {
  /** False for zero (-0 is 0). */
  readonly negative: boolean;
  /** '' for zero; otherwise no leading and no trailing '0'. */
  readonly digits: string;
  /** value = 0.digits × 10^exponent. */
  readonly exponent: number;
}

const LEXEME = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?)0*(\d+))?$/;
// An exponent of more digits than this is beyond any comparison that means something (the value
// would be 0 or Infinity as a double); exact arithmetic on it would cost time quadratic in its length.
const MAX_EXPONENT_DIGITS = 15;
const ZERO: Decimal = Object.freeze({ negative: false, digits: '', exponent: 0 });

/**
 * The exact value of a JSON number lexeme (RFC 8259 grammar; `e+` and leading zeros in the exponent
 * accepted, as String(number) can write them). null when the text is not such a lexeme or its
 * exponent is too long to compare: the caller treats that as "cannot be compared".
 */
export function decimalOf(lexeme: string): Decimal | null {
  const m = LEXEME.exec(lexeme);
  if (m === null) return null;
  const [, sign = '', int = '', frac = '', expSign = '', expDigits = '0'] = m;
  const all = int + frac;
  let lead = 0;
  while (lead < all.length && all.charCodeAt(lead) === 0x30) lead++;
  if (lead === all.length) return ZERO;
  if (expDigits.length > MAX_EXPONENT_DIGITS) return null;
  let end = all.length;
  while (all.charCodeAt(end - 1) === 0x30) end--;
  const exponent = (expSign === '-' ? -Number(expDigits) : Number(expDigits)) + int.length - lead;
  return { negative: sign === '-', digits: all.slice(lead, end), exponent };
}

/** The exact value of a number held in a parsed document: its recorded lexeme, else String(n) (exact for a double). */
export function decimalAt(container: object, key: string | number, value: number): Decimal | null {
  return decimalOf(numberLexeme(container, key) ?? String(value));
}

/** -1, 0 or 1 as a is less than, equal to or greater than b. */
export function compareDecimals(a: Decimal, b: Decimal): -1 | 0 | 1 {
  const sa = signOf(a);
  const sb = signOf(b);
  if (sa !== sb) return sa < sb ? -1 : 1;
  if (sa === 0) return 0;
  let magnitude: -1 | 0 | 1;
  if (a.exponent !== b.exponent) magnitude = a.exponent < b.exponent ? -1 : 1;
  // Same exponent: 0.DIGITS compare as strings (no trailing zeros, so a longer string with the same prefix is larger).
  else magnitude = a.digits < b.digits ? -1 : a.digits > b.digits ? 1 : 0;
  return sa === 1 || magnitude === 0 ? magnitude : magnitude === 1 ? -1 : 1;
}

/** The decimal digits of an integral value (no sign), e.g. "4111111111111111" for 4.111111111111111e15; null when not an integer or longer than maxDigits. */
export function integerDigits(d: Decimal, maxDigits: number): string | null {
  if (d.digits === '') return '0';
  if (d.exponent < d.digits.length || d.exponent > maxDigits) return null;
  return d.digits + '0'.repeat(d.exponent - d.digits.length);
}

function signOf(d: Decimal): -1 | 0 | 1 {
  return d.digits === '' ? 0 : d.negative ? -1 : 1;
}
