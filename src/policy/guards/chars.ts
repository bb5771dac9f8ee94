// The character classes, word boundaries and group separators the detectors share. Every detector
// reads char codes (no RegExp, so no backtracking); `charCodeAt` past either end is NaN, which no
// class matches, so the boundaries need no bounds checks.

export function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
export function isAlpha(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}
export function isAlnum(c: number): boolean {
  return isDigit(c) || isAlpha(c);
}
export function isWord(c: number): boolean {
  return isAlnum(c) || c === 0x5f; // _
}

export const DASH = 0x2d;
export const DOT = 0x2e;
export const SLASH = 0x2f;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const SPACE = 0x20;
export const PLUS = 0x2b;
export const OPEN = 0x28;
export const CLOSE = 0x29;

/**
 * Is the number starting at i glued to what precedes it? `A-1234`, `v1.2345`, `x/123`, `12,345`, `a1234`
 * are parts of identifiers, versions or amounts, not standalone numbers.
 */
export function joinedBefore(s: string, i: number): boolean {
  const p = s.charCodeAt(i - 1); // NaN before the start: no class matches
  if (isWord(p)) return true;
  const pp = s.charCodeAt(i - 2);
  if ((p === DASH || p === DOT || p === SLASH) && isAlnum(pp)) return true;
  return (p === COMMA || p === COLON) && isDigit(pp);
}

/** Is the number ending just before `end` glued to what follows (`1234-A`, `12.5`, `10:30`, `123abc`)? */
export function joinedAfter(s: string, end: number): boolean {
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
export function groupSepAt(s: string, j: number): number {
  let k = j;
  while (k - j <= GROUP_SEP_MAX && isGroupSep(s.charCodeAt(k))) k++;
  return k - j <= GROUP_SEP_MAX ? k - j : 0;
}
