// Card: 13–19 digits, optionally grouped (see group separators in chars.ts), starting with 2–6 (the
// major industry identifiers of the payment networks: Mastercard 2 and 5, Amex, JCB and Diners 3,
// Visa 4, Discover and UnionPay 6), passing the Luhn check. The first digit keeps millisecond
// timestamps (1…) and other long ids from reading as cards one time in ten.
//
// A separator made only of '.' and '/' is "weak": "3.4111111111111111" is a decimal and "12/2026" part
// of a date, not groups of a card. A card may use weak separators only all the way through and at
// least twice ("4111.1111.1111.1111"; a number has at most one decimal point), and never starts or
// ends next to one.
import { DOT, groupSepAt, isDigit, joinedAfter, joinedBefore, PLUS, SLASH } from './chars.js';
import type { Detector } from './detector.js';

const CARD_MIN = 13;
const CARD_MAX = 19;
// Cards are printed in groups of 4 (or 4-6-5, 4-6-4, 6-13); smaller groups are lists or phone numbers.
const CARD_MIN_GROUP = 3;

export const card: Detector<'card'> = {
  kind: 'card',
  text: 'a card number',
  test: (s) => scanCards(s, null),
  spans: (s) => {
    const out: [number, number][] = [];
    scanCards(s, (start, end) => {
      out.push([start, end]);
    });
    return out;
  },
  numberDigits: { min: CARD_MIN, max: CARD_MAX },
};

/** Whether `s` holds a card; with `onFind`, every card (not overlapping) is reported and the scan goes on. */
function scanCards(s: string, onFind: ((start: number, end: number) => void) | null): boolean {
  let found = false;
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
    windows: for (let a = 0; a < n; a++) {
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
        if (luhn(s, starts, lens, a, b)) {
          if (onFind === null) return true;
          found = true;
          onFind(starts[a]!, windowEnd);
          a = b; // the next window starts after this card
          continue windows;
        }
      }
    }
    i = runEnd;
  }
  return found;
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
