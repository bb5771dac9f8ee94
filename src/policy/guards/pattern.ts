// The pattern guard: an author's detectors, `patterns: [{name, regex}]` in RE2 syntax, run by re2js
// (a pure-JS port of RE2, https://github.com/google/re2/wiki/Syntax): no backreferences, no
// lookaround, and time linear in the text whatever the pattern and the input. A finding's type is
// the pattern's name. Compiled once, at load (compile.ts reports what does not compile).
import { RE2JS } from 're2js';
import { createCover, type Cover, type Prog } from './cover.js';
import { foldAware, type Span, type TextDetector } from './detector.js';

export interface PatternDoc {
  readonly name: string;
  readonly regex: string;
}

/** A pattern that cannot be used: `index` in the list, and why (the pattern is the author's text, no value). */
export interface PatternProblem {
  readonly index: number;
  readonly message: string;
}

interface Compiled {
  readonly name: string;
  readonly re: RE2JS;
  /** Where its matches lie, by DFA (cover.ts); null when the program is not one it reads. */
  readonly cover: Cover | null;
}

/** The patterns as one detector, or what is wrong with each that is not an RE2 pattern matching at least one character. */
export function compilePatterns(docs: readonly PatternDoc[]): TextDetector | { problems: PatternProblem[] } {
  const problems: PatternProblem[] = [];
  const compiled: Compiled[] = [];
  docs.forEach((doc, index) => {
    let re: RE2JS;
    try {
      re = RE2JS.compile(doc.regex);
    } catch (err) {
      problems.push({ index, message: `not an RE2 regular expression: ${(err as Error).message}` });
      return;
    }
    if (mayMatchEmpty(re)) {
      problems.push({
        index,
        message: 'the pattern can match an empty text (`x*`, `a?`, `\\b`, `^`): a finding needs at least one character',
      });
      return;
    }
    compiled.push({ name: doc.name, re, cover: createCover(programOf(re)) });
  });
  if (problems.length > 0) return { problems };
  const types = [...new Set(compiled.map((c) => c.name))];
  // `test` runs RE2's DFA (no positions): the first pattern in list order that matches names the finding.
  const rank = (s: string): number => {
    for (const c of compiled) if (c.re.test(s)) return types.indexOf(c.name);
    return -1;
  };
  // The inspection scans a text, then the redaction asks again before placing its findings: the
  // last answer is kept, so a long text is searched once for both, and dropped when the current
  // job ends (inspect() is synchronous), so no text is held past the inspection that read it.
  const first = foldAware(types, rank);
  let last: { text: string; type: string | null } | undefined;
  const forget = (): void => {
    last = undefined;
  };
  return {
    first: (s) => {
      if (last?.text === s) return last.type;
      if (last === undefined) queueMicrotask(forget);
      last = { text: s, type: first(s) };
      return last.type;
    },
    spans: (s) => spansOf(compiled, s),
    // A number is scanned as the text it was written with: a pattern may read digits.
    numberDigits: [{ min: 1, max: 19 }],
    text: (type) => `text matching pattern "${type}"`,
  };
}

/**
 * Every pattern's matches, sorted; overlapping ones become one, named by the pattern listed first
 * among them. A pattern's matches are the text inside any of its matches (cover.ts): adjacent and
 * overlapping matches of one pattern are one span.
 */
function spansOf(compiled: readonly Compiled[], s: string): Span[] {
  // One pattern's runs are sorted and apart already: the spans, without the merge below.
  const only = compiled.length === 1 ? compiled[0] : undefined;
  if (only?.cover) return only.cover(s).map(([start, end]) => ({ type: only.name, start, end }));
  const found: (Span & { order: number })[] = [];
  compiled.forEach((c, order) => {
    if (c.cover !== null) {
      for (const [start, end] of c.cover(s)) found.push({ type: c.name, start, end, order });
      return;
    }
    // A program cover.ts does not read (another re2js): RE2's own search, one match after another.
    const m = c.re.matcher(s);
    while (m.find()) {
      const start = m.start();
      const end = m.end();
      if (end > start) found.push({ type: c.name, start, end, order });
    }
  });
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  const out: Span[] = [];
  let cur: (Span & { order: number }) | undefined;
  for (const f of found) {
    if (cur !== undefined && f.start < cur.end) {
      cur = {
        type: f.order < cur.order ? f.type : cur.type,
        start: cur.start,
        end: Math.max(cur.end, f.end),
        order: Math.min(f.order, cur.order),
      };
      continue;
    }
    if (cur !== undefined) out.push({ type: cur.type, start: cur.start, end: cur.end });
    cur = f;
  }
  if (cur !== undefined) out.push({ type: cur.type, start: cur.start, end: cur.end });
  return out;
}

// re2js's compiled program (RE2/J's Inst opcodes): ALT 1, ALT_MATCH 2, CAPTURE 3, EMPTY_WIDTH 4,
// FAIL 5, MATCH 6, NOP 7, RUNE* 8-11. Not a public API: anything unexpected answers "may match
// empty", which refuses the pattern at load (a test pins the version's behaviour).
interface Inst {
  readonly op: number;
  readonly out: number;
  readonly arg: number;
}

/** re2js's compiled program, or an empty one (which createCover refuses) where it is not there. */
function programOf(re: RE2JS): Prog {
  const prog = (re.re2() as unknown as { prog?: { inst?: unknown; start?: unknown } }).prog;
  if (!prog || !Array.isArray(prog.inst) || typeof prog.start !== 'number') return { inst: [], start: -1 };
  return prog as Prog;
}

/** Whether MATCH is reachable from the start without consuming a character (assertions taken as passable). */
function mayMatchEmpty(re: RE2JS): boolean {
  const prog = programOf(re);
  if (prog.inst.length === 0) return true;
  const inst = prog.inst as readonly Inst[];
  const seen = new Set<number>();
  const todo = [prog.start];
  for (let pc = todo.pop(); pc !== undefined; pc = todo.pop()) {
    if (seen.has(pc)) continue;
    seen.add(pc);
    const i = inst[pc];
    if (i === undefined || typeof i.op !== 'number') return true;
    switch (i.op) {
      case 1:
      case 2:
        todo.push(i.out, i.arg);
        break;
      case 3:
      case 4:
      case 7:
        todo.push(i.out);
        break;
      case 6:
        return true;
      case 5:
      case 8:
      case 9:
      case 10:
      case 11:
        break;
      default:
        return true;
    }
  }
  return false;
}
