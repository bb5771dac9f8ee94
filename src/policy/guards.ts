// Content guards run on a tool's arguments (SPEC section 2, step 7). The only guard is `pii`: it looks
// for emails, phone numbers, payment card numbers and IBANs in every string value, every object key,
// and every number as it was written (a card number sent as a JSON number is still a card number).
//
// Every detector is a hand-written single pass (no RegExp, so no backtracking): each start position
// does bounded work and the scan resumes after the run it looked at, so a 100 KB adversarial string
// costs linear time. A finding names the JSON pointer and the kind, never the matched text.
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
 * is scanned as the text it was written with (its recorded lexeme, else its shortest form).
 * Iterative, so 256-deep arguments cannot overflow the stack.
 */
export function scanPii(args: JsonObject): GuardFinding | null {
  // Paths are built only for containers and findings; scalars carry their parent's path and key.
  const stack: { value: unknown; parent: string; key: string | null }[] = [{ value: args, parent: '', key: null }];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { value } = top;
    if (typeof value === 'string') {
      const kind = detectPii(value);
      if (kind !== null) return { path: pointer(top), kind };
    } else if (Array.isArray(value)) {
      const path = pointer(top);
      const lexemes = numberLexemes(value);
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: scannable(value[i], lexemes, String(i)), parent: path, key: String(i) });
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
        stack.push({ value: scannable((value as Record<string, unknown>)[key], lexemes, key), parent: path, key });
      }
    }
  }
  return null;
}

/** A number becomes the text it was written with; anything else is scanned as it is. */
function scannable(v: unknown, lexemes: ReadonlyMap<string, string> | undefined, key: string): unknown {
  return typeof v === 'number' ? (lexemes?.get(key) ?? String(v)) : v;
}

/** `key` is null for the arguments object itself, whose pointer is "". */
function pointer(e: { parent: string; key: string | null }): string {
  return e.key === null ? '' : `${e.parent}/${escapePointerSegment(e.key)}`;
}

/**
 * The kind of the first detector that fires. Most specific evidence first: a checksum (card, IBAN)
 * beats a shape (email), and the phone heuristic is the weakest, so it comes last.
 */
export function detectPii(s: string): PiiKind | null {
  if (hasCard(s)) return 'card';
  if (hasIban(s)) return 'iban';
  if (hasEmail(s)) return 'email';
  if (hasPhone(s)) return 'phone';
  return null;
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
// Card: 13–19 digits, optionally grouped by single spaces or dashes, starting with 2–6 (the major
// industry identifiers of the payment networks: Mastercard 2 and 5, Amex, JCB and Diners 3, Visa 4,
// Discover and UnionPay 6), passing the Luhn check. The first digit keeps millisecond timestamps
// (1…) and other long ids from reading as cards one time in ten.

const CARD_MIN = 13;
const CARD_MAX = 19;
// Cards are printed in groups of 4 (or 4-6-5, 4-6-4, 6-13); smaller groups are lists or phone numbers.
const CARD_MIN_GROUP = 3;

function hasCard(s: string): boolean {
  const starts: number[] = [];
  const lens: number[] = [];
  let i = 0;
  while (i < s.length) {
    if (!isDigit(s.charCodeAt(i))) {
      i++;
      continue;
    }
    // A run: digit groups joined by one space or dash.
    starts.length = 0;
    lens.length = 0;
    let j = i;
    for (;;) {
      const g = j;
      while (isDigit(s.charCodeAt(j))) j++;
      starts.push(g);
      lens.push(j - g);
      const sep = s.charCodeAt(j);
      if ((sep === SPACE || sep === DASH) && isDigit(s.charCodeAt(j + 1))) j++;
      else break;
    }
    const runEnd = j;
    // Try every window of whole groups: a card may sit inside a longer run ("4111 1111 1111 1111 123").
    // A leading '+' makes it a phone number: cards are never written that way.
    const glued = joinedBefore(s, i) || s.charCodeAt(i - 1) === PLUS;
    for (let a = 0; a < starts.length; a++) {
      if (a === 0 && glued) continue;
      const first = s.charCodeAt(starts[a]!); // a < length
      if (first < 0x32 || first > 0x36) continue; // '2'..'6'
      let digits = 0;
      for (let b = a; b < starts.length; b++) {
        const len = lens[b]!; // b < length
        if (len < CARD_MIN_GROUP) break; // (alone, a short group is too short anyway)
        digits += len;
        if (digits > CARD_MAX) break;
        if (digits < CARD_MIN) continue;
        const windowEnd = starts[b]! + len;
        if (windowEnd === runEnd && joinedAfter(s, runEnd)) continue;
        if (luhn(s, starts, lens, a, b)) return true;
      }
    }
    i = runEnd;
  }
  return false;
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
// separated by single spaces. Only a valid mod-97 checksum counts, so a typo'd check digit is no finding.
// Letters of either case are accepted (people type IBANs in lowercase too).

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
  if (runLen !== 4 || s.charCodeAt(runEnd) !== SPACE) return false;
  // Grouped: "GB82 WEST 1234 5698 7654 32". Every group but the last has 4 characters; try each
  // group end as the last one, since ordinary words may follow the IBAN.
  const starts = [start];
  const lens = [4];
  let total = 4;
  let j = runEnd;
  while (s.charCodeAt(j) === SPACE && isAlnum(s.charCodeAt(j + 1)) && total < IBAN_MAX) {
    const g = j + 1;
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
