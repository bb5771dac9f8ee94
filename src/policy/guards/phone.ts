// Phone: a heuristic that prefers missing an odd format over flagging every number.
//   international: `+` then 8–15 digits, groups separated by one space, dot or dash, optionally with
//                  one parenthesis ("+1 (555) 123-4567", "+44 20 7946 0958", "+4915112345678");
//   national:      10–15 digits in at least two groups with the same separators, the first group
//                  optionally in parentheses ("(555) 123-4567", "01 23 45 67 89", "030 12345678").
// Not phones: runs glued to letters or punctuation (`A-1234-5678-90`, `v1.2.3`, `10:30`), a plain
// digit run without separators (ids, timestamps), ISO dates (`2024-01-15 …`), decimals (`3.14159265358`),
// dotted IPv4 addresses, and thousands-grouped amounts (`1 234 567 890`).
import { CLOSE, DASH, DOT, isDigit, joinedAfter, joinedBefore, OPEN, PLUS, SPACE } from './chars.js';
import type { Detector } from './detector.js';

const INTL_MIN = 8;
const NATIONAL_MIN = 10;
const PHONE_MAX = 15;

// A JSON number has no `+`: one written as a number has at least NATIONAL_MIN digits.
export const phone: Detector<'phone'> = {
  kind: 'phone',
  text: 'a phone number',
  test: (s) => scanPhones(s, null),
  spans: (s) => {
    const out: [number, number][] = [];
    scanPhones(s, (start, end) => {
      out.push([start, end]);
    });
    return out;
  },
  numberDigits: { min: NATIONAL_MIN, max: PHONE_MAX },
};

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

/** Whether `s` holds a phone number; with `onFind`, every one is reported (from its `+` or `(`) and the scan goes on. */
function scanPhones(s: string, onFind: ((start: number, end: number) => void) | null): boolean {
  let found = false;
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
    if (
      !glued &&
      digits <= PHONE_MAX &&
      (c === PLUS
        ? digits >= INTL_MIN
        : digits >= NATIONAL_MIN && lens.length >= 2 && !looksLikeOtherNumber(lens, seps))
    ) {
      if (onFind === null) return true;
      found = true;
      onFind(c === PLUS || c === OPEN ? i : first, j);
    }
    i = j; // resume after the run: every character is looked at a bounded number of times
  }
  return found;
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
  if (
    lens.length >= 3 &&
    g0 !== undefined &&
    g0 <= 3 &&
    lens.slice(1).every((l) => l === 3) &&
    seps.every((c) => c === seps[0] && c !== DASH)
  ) {
    return true;
  }
  return false;
}
