// Token scanners for the JSON scanner: strings (with escapes), keys, numbers and whitespace, by
// charCodeAt over the decoded text. Strings without escapes are one slice; nothing is allocated per
// character.

import { fail } from './scan-error.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;

// Results besides the return value are passed back in module state, to avoid a result object per
// token: scanEnd is the index after the token, scanLexeme is set by every scanNumber call. Safe:
// scanning is synchronous and never re-entered. Importers see the live bindings.
export let scanEnd = 0;
export let scanLexeme: string | undefined;

/** Forgets everything from the last input (called after every parse). */
export function resetTokens(): void {
  clearKeyCache();
  scanLexeme = undefined;
}

export function skipWs(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i); // NaN past the end ends the loop
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
    else return i;
  }
}

// Keys repeat (arrays of similar objects). Reusing the string from an earlier identical key saves
// allocating a copy and V8 internalizing it again for the property store. The cache is emptied after
// every parse (resetTokens), so it never keeps one request's keys, or the body a slice may point into,
// alive afterwards.
const KEY_CACHE_SIZE = 128;
const MAX_CACHED_KEY = 32;
const keyCache: string[] = new Array<string>(KEY_CACHE_SIZE).fill('');
const usedSlots: number[] = [];

function clearKeyCache(): void {
  for (const slot of usedSlots) keyCache[slot] = '';
  usedSlots.length = 0;
}

/** scanString for object keys, answering repeated short keys from the cache. */
export function scanKeyString(text: string, start: number): string {
  const len = text.length;
  const limit = Math.min(len, start + MAX_CACHED_KEY + 1);
  for (let i = start; i < limit; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      scanEnd = i + 1;
      const n = i - start;
      if (n === 0) return '';
      const slot = (n * 31 + text.charCodeAt(start) * 7 + text.charCodeAt(i - 1)) & (KEY_CACHE_SIZE - 1);
      const cached = keyCache[slot] ?? '';
      if (cached.length === n && text.startsWith(cached, start)) return cached;
      const name = text.slice(start, i);
      if (cached === '') usedSlots.push(slot);
      keyCache[slot] = name;
      return name;
    }
    if (c === BACKSLASH || c < 0x20) break;
  }
  return scanString(text, start);
}

/** Scans a string body starting after its opening quote; sets scanEnd past the closing quote. */
export function scanString(text: string, start: number): string {
  const len = text.length;
  for (let i = start; i < len; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      scanEnd = i + 1;
      return text.slice(start, i);
    }
    if (c === BACKSLASH) return scanEscapedString(text, start, i);
    if (c < 0x20) fail('syntax', i, 'control character in a string');
  }
  return fail('syntax', len, 'unterminated string');
}

// The slow path, from the first backslash at i: decoded pieces are appended to `out`.
function scanEscapedString(text: string, start: number, i: number): string {
  const len = text.length;
  let out = text.slice(start, i);
  for (;;) {
    // text[i] is a backslash
    const e = text.charCodeAt(i + 1);
    switch (e) {
      case QUOTE:
        out += '"';
        break;
      case BACKSLASH:
        out += '\\';
        break;
      case 0x2f:
        out += '/';
        break;
      case 0x62:
        out += '\b';
        break;
      case 0x66:
        out += '\f';
        break;
      case 0x6e:
        out += '\n';
        break;
      case 0x72:
        out += '\r';
        break;
      case 0x74:
        out += '\t';
        break;
      case 0x75: {
        const cu = hex4(text, i + 2);
        if (cu < 0) fail('syntax', i, 'invalid \\u escape');
        if (cu >= 0xd800 && cu <= 0xdfff) {
          // Only an escaped high surrogate directly followed by an escaped low one is a character.
          const low =
            cu <= 0xdbff && text.charCodeAt(i + 6) === BACKSLASH && text.charCodeAt(i + 7) === 0x75
              ? hex4(text, i + 8)
              : -1;
          if (low < 0xdc00 || low > 0xdfff) fail('lone_surrogate', i, 'lone surrogate escape');
          out += String.fromCharCode(cu, low);
          i += 6;
        } else {
          out += String.fromCharCode(cu);
        }
        i += 4;
        break;
      }
      default:
        fail('syntax', i, i + 1 >= len ? 'unterminated string' : 'invalid escape');
    }
    i += 2;
    // Copy the plain run up to the next backslash or the closing quote.
    const runStart = i;
    for (;;) {
      if (i >= len) fail('syntax', len, 'unterminated string');
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        scanEnd = i + 1;
        return out + text.slice(runStart, i);
      }
      if (c === BACKSLASH) break;
      if (c < 0x20) fail('syntax', i, 'control character in a string');
      i++;
    }
    out += text.slice(runStart, i);
  }
}

/** Value of the 4 hex digits at i, or -1. */
function hex4(text: string, i: number): number {
  let v = 0;
  for (let k = i; k < i + 4; k++) {
    const c = text.charCodeAt(k);
    let d: number;
    if (c >= 0x30 && c <= 0x39) d = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) d = c - 0x57;
    else if (c >= 0x41 && c <= 0x46) d = c - 0x37;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

// Exact powers of ten for the decimal fast path below.
const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/**
 * Scans `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` at start; sets scanEnd, and
 * scanLexeme when String(value) would not reproduce the text.
 */
export function scanNumber(text: string, start: number): number {
  let i = start;
  let c = text.charCodeAt(i);
  const negative = c === MINUS;
  if (negative) c = text.charCodeAt(++i);
  const intStart = i;
  let m = 0; // the digits read so far as an integer (exact while there are at most 15)
  if (c === 0x30) {
    c = text.charCodeAt(++i);
    if (c >= 0x30 && c <= 0x39) fail('syntax', i, 'leading zero in a number');
  } else if (c >= 0x31 && c <= 0x39) {
    do {
      m = m * 10 + (c - 0x30);
      c = text.charCodeAt(++i);
    } while (c >= 0x30 && c <= 0x39);
  } else {
    fail('syntax', i, 'digit expected');
  }
  const intDigits = i - intStart;
  let fracDigits = 0;
  if (c === 0x2e) {
    c = text.charCodeAt(++i);
    if (!(c >= 0x30 && c <= 0x39)) fail('syntax', i, 'digit expected');
    const fracStart = i;
    do {
      m = m * 10 + (c - 0x30);
      c = text.charCodeAt(++i);
    } while (c >= 0x30 && c <= 0x39);
    fracDigits = i - fracStart;
  }
  let exponent = false;
  if (c === 0x65 || c === 0x45) {
    exponent = true;
    c = text.charCodeAt(++i);
    if (c === 0x2b || c === MINUS) c = text.charCodeAt(++i);
    if (!(c >= 0x30 && c <= 0x39)) fail('syntax', i, 'digit expected');
    do c = text.charCodeAt(++i);
    while (c >= 0x30 && c <= 0x39);
  }
  scanEnd = i;
  if (!exponent && intDigits + fracDigits <= 15) {
    // Integers: m is exact and String(m) is the text, except for "-0".
    if (fracDigits === 0) {
      scanLexeme = negative && m === 0 ? '-0' : undefined;
      return negative ? -m : m;
    }
    // Decimals with at most 15 digits: m / 10^k is the correctly rounded value (both operands are
    // exact doubles and IEEE division rounds once). String(n) gives back the same digits (15 decimal
    // digits survive a round trip through a double), so it reproduces the text unless the fraction
    // ends in 0 or the value is below 1e-6, where String switches to exponent form.
    if (text.charCodeAt(i - 1) !== 0x30 && (fracDigits <= 6 || m >= (POW10[fracDigits - 6] ?? Infinity))) {
      const n = m / (POW10[fracDigits] ?? 1);
      scanLexeme = undefined;
      return negative ? -n : n;
    }
  }
  const lexeme = text.slice(start, i);
  const n = Number(lexeme);
  if (n === Infinity || n === -Infinity) fail('number_out_of_range', start, 'number out of range for a double');
  scanLexeme = String(n) === lexeme ? undefined : lexeme;
  return n;
}
