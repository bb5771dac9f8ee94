// Canonical JSON text and the hashes built on it (docs/spec.md section 4). RFC 8785 (JCS) key order and string
// escaping, but numbers exactly as written in the request (their recorded lexeme), which JCS would
// re-serialize. Anything that is not I-JSON is an error, never silently normalized.

import * as crypto from 'node:crypto';
import { jsonPointer } from './pointer.js';
import { isWellFormed } from './unicode.js';
import { isJsonObject, numberLexemes } from './value.js';
import type { JsonObject, JsonValue } from './value.js';

export class CanonicalError extends Error {
  /** JSON pointer of the offending value ("" is the whole value). */
  readonly pointer: string;

  constructor(problem: string, pointer: string) {
    super(`${problem} at ${pointer === '' ? 'the root' : pointer}`);
    this.name = 'CanonicalError';
    this.pointer = pointer;
  }
}

// Deep failures collect their path while the recursion unwinds: no path bookkeeping on the hot path.
class Failure {
  readonly segments: string[] = []; // innermost first
  constructor(readonly problem: string) {}
}

// Parsed values are at most 256 deep; the bound also turns a cyclic JS object into an error instead
// of a stack overflow.
const MAX_DEPTH = 1000;

export function canonicalize(value: JsonValue): string {
  return canonicalAt(value, []);
}

/** canonicalize, for a value found at `at` inside a larger document (errors point from its root). */
function canonicalAt(value: unknown, at: readonly string[]): string {
  try {
    return write(value, 0);
  } catch (e) {
    if (e instanceof Failure) throw new CanonicalError(e.problem, jsonPointer([...at, ...e.segments.reverse()]));
    throw e;
  }
}

/** 'sha256:' + lowercase hex SHA-256 of the UTF-8 encoding of text. */
export function sha256(text: string): string {
  if (oneShotHash !== undefined) return 'sha256:' + oneShotHash('sha256', text, 'hex');
  return 'sha256:' + crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

// crypto.hash (Node >= 20.12) skips the Hash object and is about twice as fast for short texts;
// engines allows 20.11, which lacks it. It encodes a string argument as UTF-8.
const oneShotHash: typeof crypto.hash | undefined = typeof crypto.hash === 'function' ? crypto.hash : undefined;

/** What one requirement asks the operator to approve: its kind and the shapes it picked for review. */
export interface ApprovalShapeInput {
  kind: string;
  capability: JsonObject;
  presentation: JsonObject;
  /** Who may answer and how many (docs/spec.md section 4.3): hashed only when present. */
  approvers?: {
    readonly roles?: readonly string[];
    readonly teams?: readonly string[];
    readonly users?: readonly string[];
  };
  quorum?: number;
  separate_from_requester?: string;
}

/** The approval hash input of a request that one requirement asked about (docs/spec.md section 4). */
export interface ApprovalHashInput extends ApprovalShapeInput {
  tool: string;
  args: JsonObject;
  /** The host's facts the request was decided under; hashed only when it holds any. */
  context?: JsonObject | undefined;
  /** A tool's result under review (a result guard's approval); absent for a call's approval. */
  result?: JsonValue | undefined;
}

/** The approval hash input of a request that one or more requirements asked about, in load order. */
export interface ApprovalRequirementsHashInput {
  tool: string;
  args: JsonObject;
  context?: JsonObject | undefined;
  result?: JsonValue | undefined;
  requirements: readonly ApprovalShapeInput[];
}

/**
 * sha256 of the canonical {args, capability, kind, presentation, tool} of one requirement, or of
 * {args, requirements: [{capability, kind, presentation}, …], tool} of several (docs: the approval
 * hash). The presentation is included: what the reviewer was shown is part of what they granted.
 * Several requirements hash all of them, in order, so one grant cannot satisfy a requirement that
 * nobody saw; one requirement hashes exactly as before there could be several.
 */
export function approvalHash(input: ApprovalHashInput | ApprovalRequirementsHashInput): string {
  const parts = approvalHashParts(input);
  let length = 0;
  for (const p of parts) length += p.length;
  if (length <= LONG_TEXT) return sha256(parts.join(''));
  // Piece by piece: the default shapes repeat the arguments' text, and joining would copy it into
  // one text several times its size (for a 1 MiB body, megabytes per answer).
  const hash = crypto.createHash('sha256');
  for (const p of parts) hash.update(p, 'utf8');
  return 'sha256:' + hash.digest('hex');
}

// Below this many UTF-16 units, one joined text and crypto.hash are faster than several updates.
const LONG_TEXT = 16_384;

/** The canonical text approvalHash hashes. */
export function approvalHashText(input: ApprovalHashInput | ApprovalRequirementsHashInput): string {
  return approvalHashParts(input).join('');
}

/** approvalHashText in pieces: the arguments' canonical text is computed once and shared. */
function approvalHashParts(input: ApprovalHashInput | ApprovalRequirementsHashInput): string[] {
  const { tool, args } = input;
  const requirements = 'requirements' in input ? input.requirements : [input];
  if (requirements.length === 0) throw new RangeError('an approval needs at least one requirement');
  // The same text as canonicalize() of the object, built around one canonical form of the arguments:
  // the default capability and presentation ({tool, args}, the same args object) would otherwise
  // canonicalize them again for every requirement.
  const a = canonicalAt(args, ['args']);
  const t = canonicalAt(tool, ['tool']);
  // A grant under one context is never redeemed under another: the context is part of what was
  // granted. Without one (or an empty one) the text is exactly what it was before contexts existed.
  const context =
    input.context !== undefined && Object.keys(input.context).length > 0
      ? canonicalAt(input.context, ['context'])
      : undefined;
  // A result approval binds the result too (`null` is a result); a call's approval hashes as before results existed.
  const result = input.result !== undefined ? canonicalAt(input.result, ['result']) : undefined;
  const out: string[] = [];
  const part = (o: JsonObject, at: string[]): void => {
    if (isDefaultShape(o, tool, args)) out.push('{"args":', a, `,"tool":${t}}`);
    else out.push(canonicalAt(o, at));
  };
  // Who may answer, and how many, are written only when the requirement has them: one without them
  // hashes exactly as before there were any. Keys in canonical order around the shape's own.
  const approvers = (r: ApprovalShapeInput, at: string[]): string =>
    r.approvers === undefined ? '' : `"approvers":${canonicalAt(r.approvers as JsonValue, [...at, 'approvers'])},`;
  const after = (r: ApprovalShapeInput, at: string[]): void => {
    if (r.quorum !== undefined) out.push(`,"quorum":${canonicalAt(r.quorum, [...at, 'quorum'])}`);
    if (r.separate_from_requester !== undefined)
      out.push(
        `,"separate_from_requester":${canonicalAt(r.separate_from_requester, [...at, 'separate_from_requester'])}`,
      );
  };
  const shape = (r: ApprovalShapeInput, at: string[]): void => {
    out.push(approvers(r, at), '"capability":');
    part(r.capability, [...at, 'capability']);
    out.push(`,"kind":${canonicalAt(r.kind, [...at, 'kind'])},"presentation":`);
    part(r.presentation, [...at, 'presentation']);
    after(r, at);
  };
  if (requirements.length === 1) {
    // Keys in canonical order: approvers, args, capability, context, kind, presentation, quorum,
    // result, separate_from_requester, tool.
    const only = requirements[0]!;
    out.push('{', approvers(only, []), '"args":', a, ',"capability":');
    part(only.capability, ['capability']);
    if (context !== undefined) out.push(',"context":', context);
    out.push(`,"kind":${canonicalAt(only.kind, ['kind'])},"presentation":`);
    part(only.presentation, ['presentation']);
    if (only.quorum !== undefined) out.push(`,"quorum":${canonicalAt(only.quorum, ['quorum'])}`);
    if (result !== undefined) out.push(',"result":', result);
    if (only.separate_from_requester !== undefined)
      out.push(`,"separate_from_requester":${canonicalAt(only.separate_from_requester, ['separate_from_requester'])}`);
  } else {
    // args, context, requirements, tool.
    out.push('{"args":', a);
    if (context !== undefined) out.push(',"context":', context);
    out.push(',"requirements":[');
    requirements.forEach((r, i) => {
      out.push(i === 0 ? '{' : ',{');
      shape(r, ['requirements', String(i)]);
      out.push('}');
    });
    out.push(']');
    if (result !== undefined) out.push(',"result":', result);
  }
  out.push(`,"tool":${t}}`);
  return out;
}

export function isDefaultShape(o: JsonObject, tool: string, args: JsonObject): boolean {
  const keys = Object.keys(o);
  return keys.length === 2 && o.args === args && o.tool === tool && (keys[0] === 'args' || keys[0] === 'tool');
}

function write(v: unknown, depth: number): string {
  switch (typeof v) {
    case 'string':
      return writeString(v);
    case 'number':
      return writeNumber(v, undefined);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'object':
      if (v === null) return 'null';
      if (depth >= MAX_DEPTH) throw new Failure('nesting too deep (or a cycle)');
      if (Array.isArray(v)) return writeArray(v, depth + 1);
      if (isJsonObject(v)) return writeObject(v, depth + 1);
      throw new Failure('not a plain object');
    default:
      throw new Failure(`not a JSON value (${typeof v})`);
  }
}

// RFC 8785 section 3.2.2.2 escaping is what JSON.stringify does for a well-formed string (short forms
// for \b \f \n \r \t, \u00xx lowercase for other controls, everything else literal). A lone surrogate
// must be an error (JSON.stringify would emit \udxxx): see erdtman/canonicalize#23.
function writeString(s: string): string {
  if (!isWellFormed(s)) throw new Failure('lone surrogate in a string');
  return quote(s);
}

// JSON.stringify costs a runtime call per string; for short strings (most keys and many values) a
// scan for characters that need escaping is cheaper, and a plain string is quoted as it is.
const SHORT_STRING = 24;

function quote(s: string): string {
  if (s.length > SHORT_STRING) return JSON.stringify(s);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c) return JSON.stringify(s);
  }
  return '"' + s + '"';
}

// Object.keys(...).sort() for many keys; insertion sort (no call into the sort builtin) for the
// handful most objects have. Both compare UTF-16 code units, as RFC 8785 section 3.2.3 requires.
const SHORT_KEY_LIST = 16;

function sortedKeys(obj: JsonObject): string[] {
  const keys = Object.keys(obj);
  if (keys.length > SHORT_KEY_LIST) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i] ?? '';
    let j = i - 1;
    for (; j >= 0 && (keys[j] ?? '') > k; j--) keys[j + 1] = keys[j] ?? '';
    keys[j + 1] = k;
  }
  return keys;
}

function writeNumber(n: number, lexeme: string | undefined): string {
  // The lexeme is used only while it still denotes the value, so a number changed after parsing
  // hashes as its new value rather than as stale text.
  if (lexeme !== undefined && Object.is(Number(lexeme), n)) return lexeme;
  if (!Number.isFinite(n)) throw new Failure('non-finite number');
  return String(n); // String(-0) is "0"
}

function writeArray(arr: readonly unknown[], depth: number): string {
  const lexemes = numberLexemes(arr);
  let out = '[';
  for (let i = 0; i < arr.length; i++) {
    const v = arr[i]; // a hole reads as undefined and fails below
    try {
      if (i > 0) out += ',';
      out += typeof v === 'number' ? writeNumber(v, lexemes?.get(String(i))) : write(v, depth);
    } catch (e) {
      if (e instanceof Failure) e.segments.push(String(i));
      throw e;
    }
  }
  return out + ']';
}

function writeObject(obj: JsonObject, depth: number): string {
  const lexemes = numberLexemes(obj);
  const keys = sortedKeys(obj); // own enumerable string keys

  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] ?? '';
    if (!isWellFormed(k)) throw new Failure('lone surrogate in a key'); // pointer: the object
    const v: unknown = obj[k];
    try {
      if (i > 0) out += ',';
      out += quote(k) + ':' + (typeof v === 'number' ? writeNumber(v, lexemes?.get(k)) : write(v, depth));
    } catch (e) {
      if (e instanceof Failure) e.segments.push(k);
      throw e;
    }
  }
  return out + '}';
}
