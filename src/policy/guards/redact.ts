// The redaction of a JSON value by the guards that found something in it (docs/spec.md section 2.5):
// the same JSON, with the text of each finding inside its string (a value or a key) replaced by
// `[REDACTED:<type>]`, and a number that is a finding replaced by that string. Findings are listed
// per guard, type and path (a JSON pointer; for a key, the object holding it), in document order.
// Iterative, like the walk (walk.ts), so any depth is safe.
import { escapePointerSegment } from '../../json/pointer.js';
import { numberLexemes, setNumberLexeme, setOwn, type JsonObject, type JsonValue } from '../../json/value.js';
import type { Span, TextDetector } from './detector.js';
import { createNumberTest } from './walk.js';

export interface RedactingGuard {
  /** The guard's id, as findings name it. */
  readonly id: string;
  readonly detector: TextDetector;
}

export interface RedactionFinding {
  readonly guard: string;
  readonly type: string;
  /** RFC 6901 pointer, raw: the caller writes undeclared keys as `*` before showing it. */
  readonly path: string;
  readonly inKey?: true;
}

export interface Redaction {
  readonly redacted: JsonValue;
  readonly findings: RedactionFinding[];
}

/** The text that replaces a finding of `type`. */
export function redactionMark(type: string): string {
  return `[REDACTED:${type}]`;
}

type Container = JsonObject | JsonValue[];
interface Slot {
  readonly parent: Container | null;
  readonly key: string | number;
}
interface Item {
  readonly value: JsonValue;
  readonly path: string;
  readonly slot: Slot;
  /** A number's written text. */
  readonly written?: string;
  /** The key of the object member this value is. */
  readonly memberKey?: string;
}

export function redactJson(value: JsonValue, guards: readonly RedactingGuard[], rootLexeme?: string): Redaction {
  const numberTests = guards.map((g) => {
    const test = createNumberTest(g.detector);
    const min = g.detector.numberDigits.length === 0 ? null : Math.min(...g.detector.numberDigits.map((n) => n.min));
    return (written: string, double: number): string | null => {
      if (min === null) return null;
      if (written.length < min && !/[eE]/.test(written)) return null;
      return test(written, double);
    };
  });
  const findings: RedactionFinding[] = [];
  const seen = new Set<string>();
  const note = (guard: string, type: string, path: string, inKey: boolean): void => {
    const id = `${guard}\u0000${type}\u0000${path}\u0000${inKey}`;
    if (seen.has(id)) return;
    seen.add(id);
    findings.push(inKey ? { guard, type, path, inKey: true } : { guard, type, path });
  };

  /** `s` with every guard's findings replaced; the same string when there are none. */
  const inText = (s: string, path: string, inKey: boolean, memberKey?: string): string => {
    const spans: Span[] = [];
    for (const g of guards) {
      const first = g.detector.first(s);
      if (first === null) {
        const byMember = memberKey !== undefined && g.detector.member ? g.detector.member(memberKey, s) : null;
        if (byMember !== null) {
          note(g.id, byMember, path, false);
          spans.push({ type: byMember, start: 0, end: s.length });
        }
        continue;
      }
      let found = g.detector.spans(s);
      // Found only in the folded text (or no place known): the whole text goes, never a part of a finding.
      if (found.length === 0) found = [{ type: first, start: 0, end: s.length }];
      let noted: string | undefined; // a text may hold many findings of one type: one note each
      for (const span of found) {
        if (span.type !== noted) note(g.id, span.type, path, inKey);
        noted = span.type;
        spans.push(span);
      }
    }
    if (spans.length === 0) return s;
    return replaceSpans(s, spans);
  };

  let root: JsonValue = null;
  const assign = (slot: Slot, v: JsonValue): void => {
    if (slot.parent === null) root = v;
    else if (Array.isArray(slot.parent)) slot.parent[slot.key as number] = v;
    else setOwn(slot.parent, slot.key as string, v);
  };
  const rootItem: Item =
    rootLexeme === undefined
      ? { value, path: '', slot: { parent: null, key: '' } }
      : { value, path: '', slot: { parent: null, key: '' }, written: rootLexeme };
  const stack: Item[] = [rootItem];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const { value: v, path, slot } = top;
    if (typeof v === 'string') {
      assign(slot, inText(v, path, false, top.memberKey));
    } else if (typeof v === 'number') {
      const written = top.written ?? String(v);
      let mark: string | null = null;
      guards.forEach((g, i) => {
        const type = numberTests[i]!(written, v); // i < guards.length
        if (type === null) return;
        note(g.id, type, path, false);
        mark ??= redactionMark(type);
      });
      assign(slot, mark ?? v);
      // An untouched number keeps the text it was written with (the canonical form hashes it).
      if (mark === null && written !== String(v) && slot.parent !== null)
        setNumberLexeme(slot.parent, slot.key, written);
    } else if (Array.isArray(v)) {
      const out: JsonValue[] = new Array<JsonValue>(v.length).fill(null);
      assign(slot, out);
      const lexemes = numberLexemes(v);
      for (let i = v.length - 1; i >= 0; i--) {
        const written = lexemes?.get(String(i));
        const item: Item = { value: v[i]!, path: `${path}/${i}`, slot: { parent: out, key: i } };
        stack.push(written === undefined ? item : { ...item, written });
      }
    } else if (v !== null && typeof v === 'object') {
      const out: JsonObject = {};
      assign(slot, out);
      const keys = Object.keys(v); // own enumerable keys, `__proto__` data included
      const outKeys = keysOf(keys, (k) => inText(k, path, true));
      for (const k of outKeys) setOwn(out, k, null); // the order of the keys, filled below
      const lexemes = numberLexemes(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        const written = lexemes?.get(key);
        const item: Item = {
          value: v[key] as JsonValue,
          path: `${path}/${escapePointerSegment(key)}`,
          slot: { parent: out, key: outKeys[i]! },
          memberKey: key,
        };
        stack.push(written === undefined ? item : { ...item, written });
      }
    } else {
      assign(slot, v);
    }
  }
  return { redacted: root, findings };
}

/**
 * The keys of one object after redaction, still one per member: a redacted key that equals another
 * key gets `#2`, `#3`… (the first free one), so no member is lost or merged.
 */
function keysOf(keys: readonly string[], redact: (k: string) => string): string[] {
  const redacted = keys.map(redact);
  const kept = new Set(keys.filter((k, i) => redacted[i] === k));
  const used = new Set(kept);
  return keys.map((k, i) => {
    const r = redacted[i]!;
    if (r === k) return k;
    let name = r;
    for (let n = 2; used.has(name); n++) name = `${r}#${n}`;
    used.add(name);
    return name;
  });
}

/** `s` with the spans (of several guards, maybe overlapping) replaced: overlapping ones become one, named by the earliest. */
function replaceSpans(s: string, spans: Span[]): string {
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  let out = '';
  let at = 0;
  let cur: { type: string; start: number; end: number } | null = null;
  for (const sp of spans) {
    if (cur !== null && sp.start < cur.end) {
      cur.end = Math.max(cur.end, sp.end);
      continue;
    }
    if (cur !== null) {
      out += s.slice(at, cur.start) + redactionMark(cur.type);
      at = cur.end;
    }
    cur = { type: sp.type, start: sp.start, end: sp.end };
  }
  if (cur !== null) {
    out += s.slice(at, cur.start) + redactionMark(cur.type);
    at = cur.end;
  }
  return out + s.slice(at);
}
