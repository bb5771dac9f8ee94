// @ts-check
// Amounts as an operator reads them (docs/approvals.md, "Amounts"): a JSON number's text, exactly as
// the agent wrote it, with its integer digits grouped and its currency after it. Every written digit
// is kept: the number is never read into a double (1234567.8915 and 12345678901234567890 survive),
// only its text is regrouped. Pure, no DOM: the page loads it before card.js, and
// test/http/money.test.ts runs this very file in Node.
'use strict';

/** A JSON number's text: sign, integer digits, fraction digits, exponent. */
const MONEY_NUMBER = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
/** Exponents beyond this are shown as written: expanding them would print hundreds of zeros. */
const MAX_SHIFT = 40;
/** An ISO 4217 code, as the catalogue's annotations and a currency argument must hold. */
const CURRENCY_CODE = /^[A-Z]{3}$/;

/**
 * The separators of a locale ("," and "." in en-US), with Latin digits; the defaults when Intl cannot say.
 * @param {string | undefined} locale
 * @returns {{ group: (digits: string) => string, decimal: string }}
 */
function moneySeparators(locale) {
  try {
    const nf = new Intl.NumberFormat(locale, { numberingSystem: 'latn', useGrouping: true });
    const decimal = nf.formatToParts(1.5).find((p) => p.type === 'decimal')?.value || '.';
    // BigInt keeps every digit of the integer part, however long: Intl groups it exactly.
    return { group: (digits) => nf.format(BigInt(digits)), decimal };
  } catch {
    return { group: groupThousands, decimal: '.' };
  }
}

/**
 * "1234567" → "1,234,567".
 * @param {string} digits
 */
function groupThousands(digits) {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/**
 * The plain decimal digits of a number's text (an exponent applied by moving the point, never by
 * arithmetic), or null when it is not a JSON number or its exponent is too large to expand.
 * @param {string} lexeme
 * @returns {{ sign: string, int: string, frac: string } | null}
 */
function moneyDigits(lexeme) {
  const m = MONEY_NUMBER.exec(lexeme);
  if (m === null) return null;
  const sign = m[1];
  let int = m[2];
  let frac = m[3] || '';
  const exp = m[4] === undefined ? 0 : Number(m[4]);
  if (!Number.isSafeInteger(exp) || Math.abs(exp) > MAX_SHIFT) return null;
  if (exp > 0) {
    const moved = (frac + '0'.repeat(exp)).slice(0, exp);
    int = (int + moved).replace(/^0+(?=\d)/, '');
    frac = frac.slice(exp);
  } else if (exp < 0) {
    const padded = '0'.repeat(-exp) + int;
    frac = padded.slice(padded.length + exp) + frac;
    int = padded.slice(0, padded.length + exp).replace(/^0+(?=\d)/, '') || '0';
  }
  return { sign, int, frac };
}

/**
 * An amount as shown: `1234567.8915`, `EUR` → `1,234,567.8915 EUR` (en-US; another locale groups
 * its way, `1.234.567,8915 EUR` in de-DE). Every written digit is kept, trailing zeros included
 * (`120.50` stays `120.50`). A text that is not a JSON number comes back as written.
 * @param {string} lexeme the number's text as the agent wrote it
 * @param {string} currency an ISO 4217 code
 * @param {string} [locale] the grouping's locale (the browser's when absent)
 * @returns {string}
 */
function formatMoney(lexeme, currency, locale) {
  const d = moneyDigits(lexeme);
  if (d === null) return lexeme + ' ' + currency;
  const { group, decimal } = moneySeparators(locale);
  return d.sign + group(d.int) + (d.frac === '' ? '' : decimal + d.frac) + ' ' + currency;
}

/**
 * Whether a text is a currency code the page may show next to an amount.
 * @param {string} code
 */
function isCurrencyCode(code) {
  return CURRENCY_CODE.test(code);
}
