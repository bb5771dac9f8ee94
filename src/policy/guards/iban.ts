// IBAN (ISO 13616): 2 letters, 2 check digits, 11–30 alphanumerics; compact, or printed in groups of 4
// (see group separators in chars.ts: "GB82 WEST 1234 5698 7654 32", "GB82-WEST-1234-…"). Only a valid
// mod-97 checksum counts, so a typo'd check digit is no finding. Letters of either case are accepted
// (people type IBANs in lowercase too). A JSON number holds no letters, so never an IBAN.
import { groupSepAt, isAlnum, isAlpha, isDigit, isWord } from './chars.js';
import type { Detector } from './detector.js';

const IBAN_MIN = 15;
const IBAN_MAX = 34;

export const iban: Detector<'iban'> = {
  kind: 'iban',
  text: 'an IBAN',
  test: (s) => scanIbans(s, null),
  spans: (s) => {
    const out: [number, number][] = [];
    scanIbans(s, (start, end) => {
      out.push([start, end]);
    });
    return out;
  },
};

/** Whether `s` holds an IBAN; with `onFind`, every one is reported and the scan goes on. */
function scanIbans(s: string, onFind: ((start: number, end: number) => void) | null): boolean {
  let found = false;
  let i = 0;
  while (i < s.length) {
    if (!isAlnum(s.charCodeAt(i))) {
      i++;
      continue;
    }
    let runEnd = i;
    while (isAlnum(s.charCodeAt(runEnd))) runEnd++;
    const end =
      !isWord(s.charCodeAt(i - 1)) &&
      isAlpha(s.charCodeAt(i)) &&
      isAlpha(s.charCodeAt(i + 1)) &&
      isDigit(s.charCodeAt(i + 2)) &&
      isDigit(s.charCodeAt(i + 3))
        ? ibanAt(s, i, runEnd)
        : -1;
    if (end !== -1) {
      if (onFind === null) return true;
      found = true;
      onFind(i, end);
      i = end;
      continue;
    }
    i = runEnd;
  }
  return found;
}

/** The end of the IBAN starting at `start`, or -1. */
function ibanAt(s: string, start: number, runEnd: number): number {
  const runLen = runEnd - start;
  if (runLen >= IBAN_MIN && runLen <= IBAN_MAX) {
    return !isWord(s.charCodeAt(runEnd)) && mod97(s, [start], [runLen]) ? runEnd : -1;
  }
  if (runLen !== 4) return -1;
  // Grouped: "GB82 WEST 1234 5698 7654 32". Every group but the last has 4 characters; try each
  // group end as the last one, since ordinary words may follow the IBAN.
  const starts = [start];
  const lens = [4];
  let total = 4;
  let j = runEnd;
  for (
    let sep = groupSepAt(s, j);
    sep > 0 && isAlnum(s.charCodeAt(j + sep)) && total < IBAN_MAX;
    sep = groupSepAt(s, j)
  ) {
    const g = j + sep;
    let e = g;
    while (isAlnum(s.charCodeAt(e)) && e - g <= 4) e++;
    const len = e - g;
    if (len > 4) break; // a longer word is not a group
    starts.push(g);
    lens.push(len);
    total += len;
    if (total >= IBAN_MIN && total <= IBAN_MAX && !isWord(s.charCodeAt(e)) && mod97(s, starts, lens)) return e;
    if (len < 4) break;
    j = e;
  }
  return -1;
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
