// Content guards run on a tool's arguments (docs/spec.md section 2, step 7). The only guard is `pii`: it looks
// for emails, phone numbers, payment card numbers and IBANs in every string value, every object key,
// and every number, both as it was written and as its integer value (4111111111111111.0 and
// 4.111111111111111e15 are the same card number as 4111111111111111).
//
// A string holding anything outside ASCII is scanned a second time folded: NFKC (full-width digits and
// '＠', NBSP and other compatibility spaces become ASCII) with invisible characters removed (format
// characters such as U+200B or the soft hyphen, and combining marks), so look-alikes cannot hide a value.
// Plain-ASCII strings, the common case, skip the fold after one character-class test.
//
// Every detector is a hand-written single pass (no RegExp, so no backtracking): each start position
// does bounded work and the scan resumes after the run it looked at, so a 100 KB adversarial string
// costs linear time. A finding names the JSON pointer and the kind, never the matched text.
import { decimalOf, integerDigits } from '../json/decimal.js';
import { escapePointerSegment } from '../json/pointer.js';
import { numberLexemes, type JsonObject } from '../json/value.js';

export type GuardName = 'pii';
export const GUARD_NAMES: readonly GuardName[] = Object.freeze(['pii']);

export type PiiKind = 'email' | 'phone' | 'card' | 'iban';

export interface GuardFinding {
  /**
   * RFC 6901 JSON pointer of the value, e.g. "/note" or "/items/0/text"; for a finding in a key, the
   * pointer of the object holding that key (the key itself is what must not be echoed).
   */
  path: string;
  kind: PiiKind;
  /** Present (true) when the finding is in an object key rather than a value. */
  inKey?: true;
}

export function runGuard(name: GuardName, args: JsonObject): GuardFinding | null {
  switch (name) {
    case 'pii':
      return scanPii(args);
  }
}

/**
 * The first finding in document order: depth first, arrays by index, objects in Object.keys order (which
 * puts integer-like keys first, as every JS object does), an object's keys before its values. A number
 * is scanned as the text it was written with (its recorded lexeme, else its shortest form) and as its
 * integer digits (see detectInNumber). Each string and number is scanned on its own: digits split
 * across array elements (["4111", "1111", "1111", "1111"]) are not joined.
 * Iterative, so 256-deep arguments cannot overflow the stack.
 */
export function scanPii(args: JsonObject): GuardFinding | null {
  // Paths are built only for containers and findings; scalars carry their parent's path and key.
  // A number is pushed as its written text, with `isNumber` set.
  const stack: Entry[] = [{ value: args, parent: '', key: null, isNumber: false, double: Number.NaN }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { value } = top;
    if (typeof value === 'string') {
      const kind = top.isNumber ? detectInNumber(value, top.double) : detectPii(value);
      if (kind !== null) return { path: pointer(top), kind };
    } else if (Array.isArray(value)) {
      const path = pointer(top);
      const lexemes = numberLexemes(value);
      for (let i = value.length - 1; i >= 0; i--) {
        const e = entry(value[i], lexemes, path, String(i));
        if (e !== null) stack.push(e);
      }
    } else if (typeof value === 'object' && value !== null) {
      const path = pointer(top);
      const keys = Object.keys(value); // own enumerable keys only, `__proto__` data included
      for (const key of keys) {
        const kind = detectPii(key);
        if (kind !== null) return { path, kind, inKey: true };
      }
      const lexemes = numberLexemes(value);
      for (let k = keys.length - 1; k >= 0; k--) {
        const key = keys[k]!; // k < length
        const e = entry((value as Record<string, unknown>)[key], lexemes, path, key);
        if (e !== null) stack.push(e);
      }
    }
  }
  return null;
}

interface Entry {
  value: unknown;
  parent: string;
  key: string | null;
  /** `value` is the written text of a number. */
  isNumber: boolean;
  /** The number's double (NaN for anything else). */
  double: number;
}

/**
 * A number becomes the text it was written with; anything else is scanned as it is. null for what
 * holds nothing to find (a number under NUMBER_MIN_TEXT characters without an exponent, or a
 * boolean or null): a body of 250,000 small numbers must not cost a scan each.
 */
function entry(v: unknown, lexemes: ReadonlyMap<string, string> | undefined, parent: string, key: string): Entry | null {
  if (typeof v === 'number') {
    const text = lexemes?.get(key) ?? String(v);
    if (text.length < NUMBER_MIN_TEXT && !hasExponent(text)) return null;
    return { value: text, parent, key, isNumber: true, double: v };
  }
  if (typeof v !== 'string' && (typeof v !== 'object' || v === null)) return null;
  return { value: v, parent, key, isNumber: false, double: Number.NaN };
}

// The shortest number text that can hold a finding: a phone number written as a number has at
// least NATIONAL_MIN digits (no `+` in a JSON number), a card CARD_MIN; 8 leaves room for a sign.
const NUMBER_MIN_TEXT = 8;

function hasExponent(text: string): boolean {
  return text.indexOf('e') !== -1 || text.indexOf('E') !== -1;
}

/**
 * A number as written, then as its exact integer digits, then as the integer its double is:
 * `4111111111111111.0`, `4.111111111111111e15` and `4111111111111111E0` are the card 4111111111111111
 * (an argument built in code, without a lexeme, is that plain number), and so is
 * `4111111111111110.9` to a tool that reads doubles. Only integers of at most CARD_MAX digits are
 * expanded, so the expansion stays short whatever the exponent.
 */
function detectInNumber(written: string, double: number): PiiKind | null {
  const kind = detectPii(written);
  if (kind !== null) return kind;
  let digits: string | null = null;
  if (mayBeRewrittenInteger(written)) {
    const value = decimalOf(written);
    digits = value === null ? null : integerDigits(value, CARD_MAX);
    const found = digits === null ? null : detectPii(digits);
    if (found !== null) return found;
  }
  // A number written as its double's own text (most are) was scanned as that text already.
  if (!Number.isInteger(double) || written === String(double) || Math.abs(double) >= 10 ** CARD_MAX) return null;
  const ofDouble = BigInt(Math.abs(double)).toString();
  return ofDouble === digits ? null : detectPii(ofDouble);
}

/** `key` is null for the arguments object itself, whose pointer is "". */
function pointer(e: { parent: string; key: string | null }): string {
  return e.key === null ? '' : `${e.parent}/${escapePointerSegment(e.key)}`;
}

/**
 * Can the written number be an integer whose digits differ from the text? Only with an exponent or a
 * fraction of zeros ("…1.0", "…1.000"). A cheap filter: most numbers (1200, 12.5) skip decimalOf.
 */
function mayBeRewrittenInteger(written: string): boolean {
  if (hasExponent(written)) return true;
  const dot = written.indexOf('.');
  if (dot === -1) return false; // the written digits already are the integer's digits
  for (let k = dot + 1; k < written.length; k++) if (written.charCodeAt(k) !== 0x30) return false;
  return true;
}

/**
 * The kind found in s as it is or, when s holds anything outside ASCII, in its folded form. Both are
 * scanned: folding can hide a value as well as reveal one ("4111111111111111\u200bx" folds to an
 * identifier), and the more specific kind is reported ("4111\u200b 1111 1111 1111" reads as a phone
 * number until the zero-width space is removed).
 */
export function detectPii(s: string): PiiKind | null {
  const kind = detectAscii(s);
  if (kind === 'card' || !hasNonAscii(s)) return kind;
  const folded = fold(s);
  const other = folded === s ? null : detectAscii(folded);
  if (other === null) return kind;
  return kind === null || KIND_ORDER.indexOf(other) < KIND_ORDER.indexOf(kind) ? other : kind;
}

/** detectAscii's order, most specific first. */
const KIND_ORDER: readonly PiiKind[] = ['card', 'iban', 'email', 'phone'];

/**
 * The kind of the first detector that fires. Most specific evidence first: a checksum (card, IBAN)
 * beats a shape (email), and the phone heuristic is the weakest, so it comes last. The detectors read
 * ASCII digits, letters and punctuation; card and IBAN groups may also be split by Unicode spaces and dashes.
 */
function detectAscii(s: string): PiiKind | null {
  if (hasCard(s)) return 'card';
  if (hasIban(s)) return 'iban';
  if (hasEmail(s)) return 'email';
  if (hasPhone(s)) return 'phone';
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Folding look-alikes. Every format character (\p{Cf}) and combining mark is outside ASCII, so a string
// of char codes below 0x80 has nothing to fold and never pays for normalize().

// One character class, so no backtracking; V8 runs it several times faster than a charCodeAt loop.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the class is every character outside ASCII, controls included
const NON_ASCII = /[^\x00-\x7f]/;

function hasNonAscii(s: string): boolean {
  return NON_ASCII.test(s);
}

// Characters that print as nothing (U+200B–U+200D, U+2060, U+FEFF, the soft hyphen U+00AD, bidi
// controls) or only decorate the previous one (combining marks, variation selectors, the keycap U+20E3).
// Stripped after NFKC, so marks that compose into a letter (e + U+0301 = é) stay part of it.
const INVISIBLE = /[\p{Cf}\p{Mn}\p{Me}]/gu;

/** NFKC: full-width and other compatibility digits, letters, '＠' and spaces become their ASCII forms. */
function fold(s: string): string {
  return s.normalize('NFKC').replace(INVISIBLE, '');
}

// ---------------------------------------------------------------------------------------------------
// Character classes and word boundaries

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
function isAlpha(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}
function isAlnum(c: number): boolean {
  return isDigit(c) || isAlpha(c);
}
function isWord(c: number): boolean {
  return isAlnum(c) || c === 0x5f; // _
}

const DASH = 0x2d;
const DOT = 0x2e;
const SLASH = 0x2f;
const COMMA = 0x2c;
const COLON = 0x3a;
const SPACE = 0x20;
const PLUS = 0x2b;
const OPEN = 0x28;
const CLOSE = 0x29;

/**
 * Is the number starting at i glued to what precedes it? `A-1234`, `v1.2345`, `x/123`, `12,345`, `a1234`
 * are parts of identifiers, versions or amounts, not standalone numbers.
 */
function joinedBefore(s: string, i: number): boolean {
  const p = s.charCodeAt(i - 1); // NaN before the start: no class matches
  if (isWord(p)) return true;
  const pp = s.charCodeAt(i - 2);
  if ((p === DASH || p === DOT || p === SLASH) && isAlnum(pp)) return true;
  return (p === COMMA || p === COLON) && isDigit(pp);
}

/** Is the number ending just before `end` glued to what follows (`1234-A`, `12.5`, `10:30`, `123abc`)? */
function joinedAfter(s: string, end: number): boolean {
  const n = s.charCodeAt(end);
  if (isWord(n)) return true;
  const nn = s.charCodeAt(end + 1);
  if ((n === DASH || n === DOT || n === SLASH || n === COMMA || n === COLON) && isDigit(nn)) return true;
  return (n === DASH || n === SLASH) && isAlpha(nn);
}

// ---------------------------------------------------------------------------------------------------
// Group separators of cards and IBANs: a run of up to GROUP_SEP_MAX characters, each whitespace (\s,
// \p{Zs}: NBSP, narrow NBSP, thin space, tab, newline…), a dash (ASCII or Unicode), '.' or '/'. UIs and
// people print "4111 1111 1111 1111" with any of those, and sometimes two of them ("4111 - 1111").

const GROUP_SEP_MAX = 3;

function isGroupSep(c: number): boolean {
  if (c < 0x80) return c === SPACE || c === DASH || c === DOT || c === SLASH || (c >= 0x09 && c <= 0x0d);
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff || // \s beyond ASCII (\p{Zs} and more)
    (c >= 0x2010 && c <= 0x2015) ||
    c === 0x2212 // hyphens, dashes, minus sign
  );
}

/** Length of the separator run at j (1..GROUP_SEP_MAX), or 0 when there is none or it is longer. */
function groupSepAt(s: string, j: number): number {
  let k = j;
  while (k - j <= GROUP_SEP_MAX && isGroupSep(s.charCodeAt(k))) k++;
  return k - j <= GROUP_SEP_MAX ? k - j : 0;
}

// ---------------------------------------------------------------------------------------------------
// Card: 13–19 digits, optionally grouped (see group separators), starting with 2–6 (the major
// industry identifiers of the payment networks: Mastercard 2 and 5, Amex, JCB and Diners 3, Visa 4,
// Discover and UnionPay 6), passing the Luhn check. The first digit keeps millisecond timestamps
// (1…) and other long ids from reading as cards one time in ten.
//
// A separator made only of '.' and '/' is "weak": "3.4111111111111111" is a decimal and "12/2026" part
// of a date, not groups of a card. A card may use weak separators only all the way through and at
// least twice ("4111.1111.1111.1111"; a number has at most one decimal point), and never starts or
// ends next to one.

const CARD_MIN = 13;
const CARD_MAX = 19;
// Cards are printed in groups of 4 (or 4-6-5, 4-6-4, 6-13); smaller groups are lists or phone numbers.
const CARD_MIN_GROUP = 3;

function hasCard(s: string): boolean {
  // Group g of the current run: starts[g], lens[g], and weak[g] for the separator after it. The arrays
  // are reused across runs and only grow (`length = 0` would free and reallocate them on every run).
  const starts: number[] = [];
  const lens: number[] = [];
  const weak: boolean[] = [];
  let i = 0;
  while (i < s.length) {
    if (!isDigit(s.charCodeAt(i))) {
      i++;
      continue;
    }
    // A run: digit groups joined by separators.
    let n = 0;
    let j = i;
    for (;;) {
      const g = j;
      while (isDigit(s.charCodeAt(j))) j++;
      starts[n] = g;
      lens[n] = j - g;
      const sep = groupSepAt(s, j);
      const last = sep === 0 || !isDigit(s.charCodeAt(j + sep));
      weak[n] = !last && isWeakSep(s, j, sep);
      n++;
      if (last) break;
      j += sep;
    }
    const runEnd = j;
    // Try every window of whole groups: a card may sit inside a longer run ("4111 1111 1111 1111 123").
    // A leading '+' makes it a phone number: cards are never written that way.
    const glued = joinedBefore(s, i) || s.charCodeAt(i - 1) === PLUS;
    for (let a = 0; a < n; a++) {
      if (a === 0 ? glued : weak[a - 1]) continue;
      const first = s.charCodeAt(starts[a]!); // a < n
      if (first < 0x32 || first > 0x36) continue; // '2'..'6'
      let digits = 0;
      let weakInside = 0;
      for (let b = a; b < n; b++) {
        const len = lens[b]!; // b < n
        if (len < CARD_MIN_GROUP) break; // (alone, a short group is too short anyway)
        digits += len;
        if (digits > CARD_MAX) break;
        if (b > a && weak[b - 1]) weakInside++;
        if (digits < CARD_MIN) continue;
        if (weakInside > 0 && (weakInside < 2 || weakInside < b - a)) continue;
        if (weak[b]) continue; // ends next to a weak separator
        const windowEnd = starts[b]! + len;
        if (windowEnd === runEnd && joinedAfter(s, runEnd)) continue;
        if (luhn(s, starts, lens, a, b)) return true;
      }
    }
    i = runEnd;
  }
  return false;
}

/** Is the separator s[j, j+len) made only of '.' and '/'? */
function isWeakSep(s: string, j: number, len: number): boolean {
  for (let k = j; k < j + len; k++) {
    const c = s.charCodeAt(k);
    if (c !== DOT && c !== SLASH) return false;
  }
  return true;
}

/** The Luhn check over groups a..b (inclusive), reading digits right to left. */
function luhn(s: string, starts: readonly number[], lens: readonly number[], a: number, b: number): boolean {
  let sum = 0;
  let double = false;
  for (let g = b; g >= a; g--) {
    const start = starts[g]!; // a <= g <= b < length
    for (let k = start + lens[g]! - 1; k >= start; k--) {
      let d = s.charCodeAt(k) - 0x30;
      if (double) {
        d *= 2;
        if (d > 9) d -= 9;
      }
      sum += d;
      double = !double;
    }
  }
  return sum % 10 === 0;
}

// ---------------------------------------------------------------------------------------------------
// IBAN (ISO 13616): 2 letters, 2 check digits, 11–30 alphanumerics; compact, or printed in groups of 4
// (see group separators: "GB82 WEST 1234 5698 7654 32", "GB82-WEST-1234-…"). Only a valid mod-97
// checksum counts, so a typo'd check digit is no finding. Letters of either case are accepted (people
// type IBANs in lowercase too).

const IBAN_MIN = 15;
const IBAN_MAX = 34;

function hasIban(s: string): boolean {
  let i = 0;
  while (i < s.length) {
    if (!isAlnum(s.charCodeAt(i))) {
      i++;
      continue;
    }
    let runEnd = i;
    while (isAlnum(s.charCodeAt(runEnd))) runEnd++;
    if (
      !isWord(s.charCodeAt(i - 1)) &&
      isAlpha(s.charCodeAt(i)) &&
      isAlpha(s.charCodeAt(i + 1)) &&
      isDigit(s.charCodeAt(i + 2)) &&
      isDigit(s.charCodeAt(i + 3)) &&
      ibanAt(s, i, runEnd)
    ) {
      return true;
    }
    i = runEnd;
  }
  return false;
}

function ibanAt(s: string, start: number, runEnd: number): boolean {
  const runLen = runEnd - start;
  if (runLen >= IBAN_MIN && runLen <= IBAN_MAX) {
    return !isWord(s.charCodeAt(runEnd)) && mod97(s, [start], [runLen]);
  }
  if (runLen !== 4) return false;
  // Grouped: "GB82 WEST 1234 5698 7654 32". Every group but the last has 4 characters; try each
  // group end as the last one, since ordinary words may follow the IBAN.
  const starts = [start];
  const lens = [4];
  let total = 4;
  let j = runEnd;
  for (let sep = groupSepAt(s, j); sep > 0 && isAlnum(s.charCodeAt(j + sep)) && total < IBAN_MAX; sep = groupSepAt(s, j)) {
    const g = j + sep;
    let e = g;
    while (isAlnum(s.charCodeAt(e)) && e - g <= 4) e++;
    const len = e - g;
    if (len > 4) break; // a longer word is not a group
    starts.push(g);
    lens.push(len);
    total += len;
    if (total >= IBAN_MIN && total <= IBAN_MAX && !isWord(s.charCodeAt(e)) && mod97(s, starts, lens)) return true;
    if (len < 4) break;
    j = e;
  }
  return false;
}

/** ISO 7064 MOD 97-10 over the groups: move the first four characters to the end, letters are 10..35. */
function mod97(s: string, starts: readonly number[], lens: readonly number[]): boolean {
  const first = starts[0]!; // callers pass at least one group of at least 4
  const check = (s.charCodeAt(first + 2) - 0x30) * 10 + (s.charCodeAt(first + 3) - 0x30);
  if (check < 2 || check > 98) return false; // 00, 01 and 99 are never issued
  let rem = 0;
  const add = (c: number): void => {
    if (isDigit(c)) rem = (rem * 10 + (c - 0x30)) % 97;
    else rem = (rem * 100 + ((c | 0x20) - 0x61 + 10)) % 97; // | 0x20 lowercases ASCII letters
  };
  for (let g = 0; g < starts.length; g++) {
    const st = starts[g]!; // g < length
    for (let k = g === 0 ? st + 4 : st; k < st + lens[g]!; k++) add(s.charCodeAt(k));
  }
  for (let k = first; k < first + 4; k++) add(s.charCodeAt(k));
  return rem === 1;
}

// ---------------------------------------------------------------------------------------------------
// Email: conservative `local@domain.tld`. Local part: up to 64 of [A-Za-z0-9._%+-] right before the `@`.
// Domain: dot-separated labels of letters, digits and inner hyphens, at least two, the last one 2+
// letters, at most 253 characters in all.

const LOCAL_MAX = 64;
const DOMAIN_MAX = 253;
const LABEL_MAX = 63;

function hasEmail(s: string): boolean {
  for (let at = s.indexOf('@'); at !== -1; at = s.indexOf('@', at + 1)) {
    if (emailAt(s, at)) return true;
  }
  return false;
}

function isLocalChar(c: number): boolean {
  return isAlnum(c) || c === DOT || c === 0x5f || c === 0x25 /* % */ || c === PLUS || c === DASH;
}

function emailAt(s: string, at: number): boolean {
  // Local part: bounded look-back, so a string of `@`s costs O(n).
  let i = at - 1;
  while (i >= 0 && at - i <= LOCAL_MAX && isLocalChar(s.charCodeAt(i))) i--;
  let localStart = i + 1;
  while (localStart < at && s.charCodeAt(localStart) === DOT) localStart++;
  if (localStart >= at || s.charCodeAt(at - 1) === DOT) return false;

  let end = at + 1;
  while (end < s.length && end - at <= DOMAIN_MAX + 1 && (isAlnum(s.charCodeAt(end)) || s.charCodeAt(end) === DOT || s.charCodeAt(end) === DASH)) {
    end++;
  }
  while (end > at + 1 && s.charCodeAt(end - 1) === DOT) end--; // "write to a@b.com."
  const domainLen = end - at - 1;
  if (domainLen < 4 || domainLen > DOMAIN_MAX) return false;
  let labels = 0;
  let labelStart = at + 1;
  for (let k = at + 1; k <= end; k++) {
    if (k < end && s.charCodeAt(k) !== DOT) continue;
    const len = k - labelStart;
    if (len === 0 || len > LABEL_MAX) return false;
    if (s.charCodeAt(labelStart) === DASH || s.charCodeAt(k - 1) === DASH) return false;
    labels++;
    if (k === end) {
      if (labels < 2 || len < 2) return false;
      for (let t = labelStart; t < end; t++) if (!isAlpha(s.charCodeAt(t))) return false;
    }
    labelStart = k + 1;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------
// Phone: a heuristic that prefers missing an odd format over flagging every number.
//   international: `+` then 8–15 digits, groups separated by one space, dot or dash, optionally with
//                  one parenthesis ("+1 (555) 123-4567", "+44 20 7946 0958", "+4915112345678");
//   national:      10–15 digits in at least two groups with the same separators, the first group
//                  optionally in parentheses ("(555) 123-4567", "01 23 45 67 89", "030 12345678").
// Not phones: runs glued to letters or punctuation (`A-1234-5678-90`, `v1.2.3`, `10:30`), a plain
// digit run without separators (ids, timestamps), ISO dates (`2024-01-15 …`), decimals (`3.14159265358`),
// dotted IPv4 addresses, and thousands-grouped amounts (`1 234 567 890`).

const INTL_MIN = 8;
const NATIONAL_MIN = 10;
const PHONE_MAX = 15;

function isPlainSep(c: number): boolean {
  return c === SPACE || c === DOT || c === DASH;
}
function isParen(c: number): boolean {
  return c === OPEN || c === CLOSE;
}

/** Length of the separator at j (`-`, ` `, `.`, `(`, `)`, or one of each of those kinds) if a digit follows, else 0. */
function separatorAt(s: string, j: number): number {
  const a = s.charCodeAt(j);
  const b = s.charCodeAt(j + 1);
  if (isPlainSep(a) || isParen(a)) {
    if (isDigit(b)) return 1;
    if (((isPlainSep(a) && isParen(b)) || (isParen(a) && isPlainSep(b))) && isDigit(s.charCodeAt(j + 2))) return 2;
  }
  return 0;
}

function hasPhone(s: string): boolean {
  const lens: number[] = [];
  const seps: number[] = []; // the first character of each separator
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    let first: number; // index of the first digit
    if (c === PLUS && isDigit(s.charCodeAt(i + 1))) first = i + 1;
    else if (c === OPEN && isDigit(s.charCodeAt(i + 1))) first = i + 1;
    else if (isDigit(c)) first = i;
    else {
      i++;
      continue;
    }
    lens.length = 0;
    seps.length = 0;
    let j = first;
    let digits = 0;
    for (;;) {
      const g = j;
      while (isDigit(s.charCodeAt(j))) j++;
      lens.push(j - g);
      digits += j - g;
      const sep = separatorAt(s, j);
      if (sep === 0) break;
      seps.push(s.charCodeAt(j));
      j += sep;
    }
    const glued = joinedBefore(s, i) || joinedAfter(s, j);
    if (!glued && digits <= PHONE_MAX) {
      if (c === PLUS) {
        if (digits >= INTL_MIN) return true;
      } else if (digits >= NATIONAL_MIN && lens.length >= 2 && !looksLikeOtherNumber(lens, seps)) {
        return true;
      }
    }
    i = j; // resume after the run: every character is looked at a bounded number of times
  }
  return false;
}

function looksLikeOtherNumber(lens: readonly number[], seps: readonly number[]): boolean {
  const [g0, g1, g2] = lens;
  // 3.14159265358979: a decimal number
  if (lens.length === 2 && seps[0] === DOT) return true;
  // 2024-01-15 (and 2024/01/15 or 2024.01.15 followed by more numbers)
  if (g0 === 4 && g1 === 2 && g2 === 2 && seps[0] !== SPACE && seps[0] === seps[1]) return true;
  // 192.168.100.200
  if (lens.length === 4 && seps.every((c) => c === DOT) && lens.every((l) => l <= 3)) return true;
  // 1 234 567 890 or 1.234.567.890
  if (lens.length >= 3 && g0 !== undefined && g0 <= 3 && lens.slice(1).every((l) => l === 3) && seps.every((c) => c === seps[0] && c !== DASH)) {
    return true;
  }
  return false;
}
