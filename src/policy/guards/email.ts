// Email: conservative `local@domain.tld`. Local part: up to 64 of [A-Za-z0-9._%+-] right before the `@`.
// Domain: dot-separated labels of letters, digits and inner hyphens, at least two, the last one 2+
// letters, at most 253 characters in all. A JSON number holds no `@`, so never an email address.
import { DASH, DOT, isAlnum, isAlpha, PLUS } from './chars.js';
import type { Detector } from './detector.js';

const LOCAL_MAX = 64;
const DOMAIN_MAX = 253;
const LABEL_MAX = 63;

export const email: Detector<'email'> = {
  kind: 'email',
  text: 'an email address',
  test: hasEmail,
  spans: (s) => {
    const out: [number, number][] = [];
    for (let at = s.indexOf('@'); at !== -1; at = s.indexOf('@', at + 1)) {
      const span = emailAt(s, at);
      if (span === null) continue;
      out.push(span);
      at = span[1] - 1; // resume after this address
    }
    return out;
  },
};

function hasEmail(s: string): boolean {
  for (let at = s.indexOf('@'); at !== -1; at = s.indexOf('@', at + 1)) {
    if (emailAt(s, at) !== null) return true;
  }
  return false;
}

function isLocalChar(c: number): boolean {
  return isAlnum(c) || c === DOT || c === 0x5f || c === 0x25 /* % */ || c === PLUS || c === DASH;
}

/** The address around the `@` at `at`, [start, end), or null. */
function emailAt(s: string, at: number): [number, number] | null {
  // Local part: bounded look-back, so a string of `@`s costs O(n).
  let i = at - 1;
  while (i >= 0 && at - i <= LOCAL_MAX && isLocalChar(s.charCodeAt(i))) i--;
  let localStart = i + 1;
  while (localStart < at && s.charCodeAt(localStart) === DOT) localStart++;
  if (localStart >= at || s.charCodeAt(at - 1) === DOT) return null;

  let end = at + 1;
  while (
    end < s.length &&
    end - at <= DOMAIN_MAX + 1 &&
    (isAlnum(s.charCodeAt(end)) || s.charCodeAt(end) === DOT || s.charCodeAt(end) === DASH)
  ) {
    end++;
  }
  while (end > at + 1 && s.charCodeAt(end - 1) === DOT) end--; // "write to a@b.com."
  const domainLen = end - at - 1;
  if (domainLen < 4 || domainLen > DOMAIN_MAX) return null;
  let labels = 0;
  let labelStart = at + 1;
  for (let k = at + 1; k <= end; k++) {
    if (k < end && s.charCodeAt(k) !== DOT) continue;
    const len = k - labelStart;
    if (len === 0 || len > LABEL_MAX) return null;
    if (s.charCodeAt(labelStart) === DASH || s.charCodeAt(k - 1) === DASH) return null;
    labels++;
    if (k === end) {
      if (labels < 2 || len < 2) return null;
      for (let t = labelStart; t < end; t++) if (!isAlpha(s.charCodeAt(t))) return null;
    }
    labelStart = k + 1;
  }
  return [localStart, end];
}
