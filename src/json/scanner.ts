// The strict RFC 8259 scanner behind parseJson: decoded text → JsonValue, positions in UTF-16 indices.
// Iterative (an explicit container stack), so nesting is bounded by maxDepth alone and deep input can
// never overflow the call stack. Hot path: charCodeAt scanning, string slices when there is no escape,
// no allocation per character. Byte offsets and messages are the caller's job (parse.ts).

import { escapePointerSegment } from './pointer.js';
import { firstLoneSurrogate } from './unicode.js';
import { setNumberLexeme, setOwn } from './value.js';
import type { JsonObject, JsonValue } from './value.js';

export type ScanErrorCode =
  | 'empty'
  | 'syntax'
  | 'duplicate_key'
  | 'too_deep'
  | 'lone_surrogate'
  | 'trailing_data'
  | 'number_out_of_range';

/** Internal failure: code, UTF-16 index and pointer. Not an Error: it never escapes parse.ts. */
export class ScanError {
  pointer = '';
  constructor(
    readonly code: ScanErrorCode,
    readonly index: number,
    /** A fixed phrase saying what was wrong; never text taken from the input. */
    readonly detail: string,
  ) {}
}

/** Where values and keys start, recorded in document order when positions are wanted. */
export interface Sites {
  valuePointers: string[];
  valueIndexes: number[];
  keyPointers: string[];
  keyIndexes: number[];
}

export interface ScanOptions {
  maxDepth: number;
  /** Reject raw (unescaped) lone surrogates inside strings: only needed for ill-formed JS strings. */
  rawSurrogates: boolean;
  sites: Sites | null;
}

type Container = JsonObject | JsonValue[];

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const MINUS = 0x2d;

// Results of the string, number and key scanners (scanEnd, scanLexeme, scannedKey) are passed back in
// module state to avoid a result object per token. Safe: scanning is synchronous and never re-entered.
let scanEnd = 0;
let scanLexeme: string | undefined;
let scannedKey = '';

function fail(code: ScanErrorCode, index: number, detail: string): never {
  throw new ScanError(code, index, detail);
}

export function scan(text: string, options: ScanOptions): JsonValue {
  const { maxDepth, rawSurrogates, sites } = options;
  const len = text.length;

  // Open containers enclosing `cur`, outermost first, with the member key each one is parsing.
  const stack: Container[] = [];
  const keyStack: string[] = [];
  let cur: Container | null = null;
  let key = '';
  // Pointer of `cur` and of the enclosing containers, kept only when recording positions.
  const ptrStack: string[] = [];
  let curPtr = '';
  // Whether the error pointer includes cur's member: true while a member value is being parsed,
  // false while parsing a key or the punctuation between members.
  let inMember = true;

  let i = skipWs(text, 0);
  if (i >= len) fail('empty', i, 'empty input: no JSON value');

  try {
    for (;;) {
      // ---- A value starts at i.
      inMember = true;
      let c = text.charCodeAt(i);
      let value: JsonValue;
      scanLexeme = undefined;
      if (sites !== null) {
        sites.valuePointers.push(cur === null ? '' : memberPointer(curPtr, cur, key));
        sites.valueIndexes.push(i);
      }
      if (c === QUOTE) {
        value = scanString(text, i + 1);
        if (rawSurrogates) checkRaw(text, i + 1, scanEnd - 1);
        i = scanEnd;
      } else if (c === LBRACE || c === LBRACKET) {
        if (stack.length + (cur === null ? 0 : 1) >= maxDepth) {
          fail('too_deep', i, `nesting deeper than ${maxDepth}`);
        }
        const isObject = c === LBRACE;
        const open: Container = isObject ? {} : [];
        i = skipWs(text, i + 1);
        c = text.charCodeAt(i);
        if (c === (isObject ? RBRACE : RBRACKET)) {
          value = open; // empty: nothing to push
          i++;
        } else {
          if (cur !== null) {
            stack.push(cur);
            keyStack.push(key);
            if (sites !== null) {
              ptrStack.push(curPtr);
              curPtr = memberPointer(curPtr, cur, key);
            }
          }
          cur = open;
          key = '';
          if (Array.isArray(open)) continue; // the first element starts at i
          inMember = false;
          i = scanKey(text, i, open, rawSurrogates, sites, curPtr);
          key = scannedKey;
          continue;
        }
      } else if (c === MINUS || (c >= 0x30 && c <= 0x39)) {
        value = scanNumber(text, i);
        i = scanEnd;
      } else if (c === 0x74 && text.startsWith('true', i)) {
        value = true;
        i += 4;
      } else if (c === 0x66 && text.startsWith('false', i)) {
        value = false;
        i += 5;
      } else if (c === 0x6e && text.startsWith('null', i)) {
        value = null;
        i += 4;
      } else {
        fail('syntax', i, i >= len ? 'unexpected end of input' : 'unexpected character');
      }

      // ---- `value` is complete: store it, then handle "," or the end of containers it completes.
      for (;;) {
        if (cur === null) {
          inMember = false;
          i = skipWs(text, i);
          if (i < len) fail('trailing_data', i, 'trailing data after the JSON value');
          return value;
        }
        if (Array.isArray(cur)) {
          if (scanLexeme !== undefined) setNumberLexeme(cur, cur.length, scanLexeme);
          cur.push(value);
        } else {
          if (key === '__proto__') setOwn(cur, key, value);
          else cur[key] = value;
          if (scanLexeme !== undefined) setNumberLexeme(cur, key, scanLexeme);
        }
        scanLexeme = undefined;
        inMember = false;
        i = skipWs(text, i);
        c = text.charCodeAt(i);
        if (c === COMMA) {
          i = skipWs(text, i + 1);
          if (!Array.isArray(cur)) {
            i = scanKey(text, i, cur, rawSurrogates, sites, curPtr);
            key = scannedKey;
          }
          break;
        }
        if (c === (Array.isArray(cur) ? RBRACKET : RBRACE)) {
          i++;
          value = cur;
          const parent = stack.pop();
          if (parent === undefined) {
            cur = null;
          } else {
            cur = parent;
            key = keyStack.pop() ?? '';
            if (sites !== null) curPtr = ptrStack.pop() ?? '';
          }
          continue;
        }
        fail(
          'syntax',
          i,
          i >= len ? 'unexpected end of input' : Array.isArray(cur) ? 'expected "," or "]"' : 'expected "," or "}"',
        );
      }
    }
  } catch (e) {
    // The pointer of the value being parsed: each open container's member, plus cur's own member
    // only while a member value (not a key or punctuation) was being parsed.
    if (e instanceof ScanError) {
      let pointer = '';
      for (let d = 0; d < stack.length; d++) {
        const frame = stack[d];
        pointer += '/' + (Array.isArray(frame) ? String(frame.length) : escapePointerSegment(keyStack[d] ?? ''));
      }
      if (cur !== null && inMember) pointer = memberPointer(pointer, cur, key);
      e.pointer = pointer;
    }
    throw e;
  } finally {
    // Keep nothing from this input in module state.
    clearKeyCache();
    scanLexeme = undefined;
    scannedKey = '';
  }
}

/**
 * Parses `"name" :` at i into scannedKey, rejecting a duplicate of a member already in obj, and
 * returns the index where the member's value starts.
 */
function scanKey(
  text: string,
  i: number,
  obj: JsonObject,
  rawSurrogates: boolean,
  sites: Sites | null,
  objPtr: string,
): number {
  const len = text.length;
  if (text.charCodeAt(i) !== QUOTE) {
    fail('syntax', i, i >= len ? 'unexpected end of input' : 'expected a string key');
  }
  const name = scanKeyString(text, i + 1);
  if (rawSurrogates) checkRaw(text, i + 1, scanEnd - 1);
  // Decoded names are compared, so "t\u006fol" repeats "tool"; hasOwn, as "toString" is inherited.
  if (Object.hasOwn(obj, name)) fail('duplicate_key', i, 'duplicate key');
  const keyStart = i;
  i = skipWs(text, scanEnd);
  if (text.charCodeAt(i) !== COLON) {
    fail('syntax', i, i >= len ? 'unexpected end of input' : 'expected ":"');
  }
  if (sites !== null) {
    sites.keyPointers.push(objPtr + '/' + escapePointerSegment(name));
    sites.keyIndexes.push(keyStart);
  }
  scannedKey = name;
  return skipWs(text, i + 1);
}

// Keys repeat (arrays of similar objects). Reusing the string from an earlier identical key saves
// allocating a copy and V8 internalizing it again for the property store. The cache is emptied after
// every parse (see scan), so it never keeps one request's keys, or the body a slice may point into,
// alive afterwards.
const KEY_CACHE_SIZE = 128;
const MAX_CACHED_KEY = 32;
const keyCache: string[] = new Array<string>(KEY_CACHE_SIZE).fill('');
const usedSlots: number[] = [];

function clearKeyCache(): void {
  for (const slot of usedSlots) keyCache[slot] = '';
  usedSlots.length = 0;
}

function scanKeyString(text: string, start: number): string {
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

function memberPointer(containerPtr: string, container: Container, key: string): string {
  return containerPtr + '/' + (Array.isArray(container) ? String(container.length) : escapePointerSegment(key));
}

function skipWs(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i); // NaN past the end ends the loop
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
    else return i;
  }
}

// A raw lone surrogate can only come from an ill-formed JS string (decoded bytes never hold one).
function checkRaw(text: string, from: number, to: number): void {
  const at = firstLoneSurrogate(text, from, to);
  if (at !== -1) fail('lone_surrogate', at, 'lone surrogate in a string');
}

/** Scans a string body starting after its opening quote; sets scanEnd past the closing quote. */
function scanString(text: string, start: number): string {
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
function scanNumber(text: string, start: number): number {
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
      if (negative && m === 0) scanLexeme = '-0';
      return negative ? -m : m;
    }
    // Decimals with at most 15 digits: m / 10^k is the correctly rounded value (both operands are
    // exact doubles and IEEE division rounds once). String(n) gives back the same digits (15 decimal
    // digits survive a round trip through a double), so it reproduces the text unless the fraction
    // ends in 0 or the value is below 1e-6, where String switches to exponent form.
    if (text.charCodeAt(i - 1) !== 0x30 && (fracDigits <= 6 || m >= (POW10[fracDigits - 6] ?? Infinity))) {
      const n = m / (POW10[fracDigits] ?? 1);
      return negative ? -n : n;
    }
  }
  const lexeme = text.slice(start, i);
  const n = Number(lexeme);
  if (n === Infinity || n === -Infinity) fail('number_out_of_range', start, 'number out of range for a double');
  if (String(n) !== lexeme) scanLexeme = lexeme;
  return n;
}
