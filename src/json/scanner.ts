// The strict RFC 8259 scanner behind parseJson: decoded text → JsonValue, positions in UTF-16 indices.
// Iterative (an explicit container stack), so nesting is bounded by maxDepth alone and deep input can
// never overflow the call stack. Tokens are read by tokens.ts; byte offsets and messages are the
// caller's job (parse.ts).

import { escapePointerSegment } from './pointer.js';
import { fail, ScanError } from './scan-error.js';
import { resetTokens, scanEnd, scanKeyString, scanLexeme, scanNumber, scanString, skipWs } from './tokens.js';
import { firstLoneSurrogate } from './unicode.js';
import { setNumberLexeme, setOwn } from './value.js';
import type { JsonObject, JsonValue } from './value.js';

/** Where values and keys start, recorded in document order when positions are wanted. */
export interface Sites {
  valuePointers: string[];
  valueIndexes: number[];
  keyPointers: string[];
  keyIndexes: number[];
}

export interface ScanOptions {
  maxDepth: number;
  /** Object members allowed in the whole document. */
  maxKeys: number;
  /** Reject raw (unescaped) lone surrogates inside strings: only needed for ill-formed JS strings. */
  rawSurrogates: boolean;
  sites: Sites | null;
}

type Container = JsonObject | JsonValue[];

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const MINUS = 0x2d;

// scanKey's second result (see tokens.ts for why results travel in module state).
let scannedKey = '';
// Keys still allowed in the document being scanned, and the limit (for the message).
let keysLeft = Infinity;
let keyLimit = Infinity;

export function scan(text: string, options: ScanOptions): JsonValue {
  const { maxDepth, rawSurrogates, sites } = options;
  const len = text.length;
  keysLeft = keyLimit = options.maxKeys;

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
      let lexeme: string | undefined; // of a number whose text String(value) would not reproduce
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
        lexeme = scanLexeme;
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
          if (lexeme !== undefined) setNumberLexeme(cur, cur.length, lexeme);
          cur.push(value);
        } else {
          if (key === '__proto__') setOwn(cur, key, value);
          else cur[key] = value;
          if (lexeme !== undefined) setNumberLexeme(cur, key, lexeme);
        }
        lexeme = undefined;
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
    resetTokens();
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
  if (--keysLeft < 0) fail('too_many_keys', i, `more than ${keyLimit} object keys`);
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

function memberPointer(containerPtr: string, container: Container, key: string): string {
  return containerPtr + '/' + (Array.isArray(container) ? String(container.length) : escapePointerSegment(key));
}

// A raw lone surrogate can only come from an ill-formed JS string (decoded bytes never hold one).
function checkRaw(text: string, from: number, to: number): void {
  const at = firstLoneSurrogate(text, from, to);
  if (at !== -1) fail('lone_surrogate', at, 'lone surrogate in a string');
}
