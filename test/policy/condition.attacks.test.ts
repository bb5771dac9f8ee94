// The condition language under attack (docs/spec.md section 3).
// 1. A mutation fuzzer: whatever a policy author (or an attacker with write access to the policy
//    repository) writes, compileCondition either compiles it or throws ConditionError with a sane
//    column; and a compiled condition's evaluation is total.
// 2. A differential test of evaluation against a tiny reference evaluator written here from docs/spec.md
//    section 3 alone, over random well-typed conditions and random arguments that include missing
//    paths and values of every JSON type: the three-valued result must agree exactly.
// (Monotonicity, deny-wins and the decision-level differential are in test/policy/properties.test.ts
// and test/policy/differential.test.ts; they are not repeated here.)
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../src/json/value.js';
import { on } from '../helpers/condition.js';
import { compileCondition, ConditionError, type CompiledCondition } from '../../src/policy/condition/compile.js';
import { runs } from '../helpers/runs.js';

const U = 'undecidable' as const;
type Truth = true | false | typeof U;

// ---------------------------------------------------------------------------------------------------
// The reference: an AST, a renderer to condition source, and an evaluator written from the contract (docs/spec.md).

type Lit = null | boolean | number | string;
type Operand = { k: 'path'; segs: string[] } | { k: 'lit'; v: Lit };
type OrderOp = '<' | '<=' | '>' | '>=';
type Cond =
  | { k: 'bare'; segs: string[] }
  | { k: 'const'; v: boolean }
  | { k: 'eq'; op: '==' | '!='; l: Operand; r: Operand }
  | { k: 'ord'; op: OrderOp; l: Operand; r: Operand }
  | { k: 'inList'; x: string[]; items: Lit[] }
  | { k: 'inPath'; x: Operand; arr: string[] }
  | { k: 'not'; c: Cond }
  | { k: 'and' | 'or'; cs: Cond[] };

const MISSING = Symbol('missing');
type Val = JsonValue | typeof MISSING;

/** docs/spec.md section 3: dotted paths read own members only; an integer segment indexes an array; anything else is missing. */
function refGet(args: JsonObject, segs: readonly string[]): Val {
  let cur: Val = args;
  for (const s of segs) {
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(s) || Number(s) >= cur.length) return MISSING;
      cur = cur[Number(s)]!;
    } else if (cur !== null && typeof cur === 'object') {
      if (!Object.hasOwn(cur, s)) return MISSING;
      cur = (cur as Record<string, JsonValue>)[s]!;
    } else {
      return MISSING;
    }
  }
  return cur;
}

type Kind = 'missing' | 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';
function refKind(v: Val): Kind {
  if (v === MISSING) return 'missing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v as Kind;
}
const scalar = (k: Kind): boolean => k === 'null' || k === 'boolean' || k === 'number' || k === 'string';

const kNot = (t: Truth): Truth => (t === U ? U : !t);
function kOr(ts: Iterable<Truth>): Truth {
  let u = false;
  for (const t of ts) {
    if (t === true) return true;
    if (t === U) u = true;
  }
  return u ? U : false;
}
const kAnd = (ts: Truth[]): Truth => kNot(kOr(ts.map(kNot)));

/** Two values: both present scalars of one JSON type, else undecidable (across types, missing, containers). */
function refEq(l: Val, r: Val): Truth {
  const lk = refKind(l);
  if (!scalar(lk) || lk !== refKind(r)) return U;
  return l === r;
}
/** Against the `null` LITERAL: any present value compares. */
const refIsNull = (v: Val): Truth => (v === MISSING ? U : v === null);

/** UTF-16 code unit order, written out rather than borrowed from `<`. */
function codeUnitCmp(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a.charCodeAt(i) - b.charCodeAt(i);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}
function refOrd(op: OrderOp, l: Val, r: Val): Truth {
  const lk = refKind(l);
  if ((lk !== 'number' && lk !== 'string') || lk !== refKind(r)) return U;
  const c =
    lk === 'number'
      ? (l as number) < (r as number)
        ? -1
        : (l as number) > (r as number)
          ? 1
          : 0
      : codeUnitCmp(l as string, r as string);
  return op === '<' ? c < 0 : op === '<=' ? c <= 0 : op === '>' ? c > 0 : c >= 0;
}

/** `x in …`: x a present scalar; then "x equals some element", where a null element compares with anything present. */
function refMember(x: Val, elements: readonly Val[]): Truth {
  if (!scalar(refKind(x))) return U;
  return kOr(elements.map((e) => (e === null ? x === null : refEq(x, e))));
}

function refEval(c: Cond, args: JsonObject): Truth {
  const read = (o: Operand): Val => (o.k === 'lit' ? o.v : refGet(args, o.segs));
  switch (c.k) {
    case 'bare': {
      const v = refGet(args, c.segs);
      return typeof v === 'boolean' ? v : U;
    }
    case 'const':
      return c.v;
    case 'eq': {
      const t =
        c.l.k === 'lit' && c.l.v === null
          ? refIsNull(read(c.r))
          : c.r.k === 'lit' && c.r.v === null
            ? refIsNull(read(c.l))
            : refEq(read(c.l), read(c.r));
      return c.op === '==' ? t : kNot(t);
    }
    case 'ord':
      return refOrd(c.op, read(c.l), read(c.r));
    case 'inList':
      return refMember(refGet(args, c.x), c.items);
    case 'inPath': {
      const arr = refGet(args, c.arr);
      if (!Array.isArray(arr)) return U;
      // `null in path` (the literal): null == element for each element, which any present value allows.
      if (c.x.k === 'lit' && c.x.v === null) return kOr(arr.map((e) => refIsNull(e)));
      return refMember(read(c.x), arr);
    }
    case 'not':
      return kNot(refEval(c.c, args));
    case 'and':
      return kAnd(c.cs.map((x) => refEval(x, args)));
    case 'or':
      return kOr(c.cs.map((x) => refEval(x, args)));
  }
}

function renderString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (s[i] === '"' || s[i] === '\\') out += `\\${s[i]}`;
    else if (c < 0x20 || (c >= 0xd800 && c <= 0xdfff)) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += s[i];
  }
  return `${out}"`;
}
const renderLit = (v: Lit): string => (typeof v === 'string' ? renderString(v) : String(v));
const renderOperand = (o: Operand): string => (o.k === 'lit' ? renderLit(o.v) : o.segs.join('.'));

/** Fully parenthesized. */
function renderFull(c: Cond): string {
  switch (c.k) {
    case 'bare':
      return c.segs.join('.');
    case 'const':
      return String(c.v);
    case 'eq':
    case 'ord':
      return `${renderOperand(c.l)} ${c.op} ${renderOperand(c.r)}`;
    case 'inList':
      return `${c.x.join('.')} in [${c.items.map(renderLit).join(', ')}]`;
    case 'inPath':
      return `${renderOperand(c.x)} in ${c.arr.join('.')}`;
    case 'not':
      return `not (${renderFull(c.c)})`;
    case 'and':
    case 'or':
      return c.cs.map((x) => `(${renderFull(x)})`).join(` ${c.k} `);
  }
}

/** With the fewest parentheses the grammar needs (or < and < not < comparison): exercises precedence. */
function renderMin(c: Cond, outer: 0 | 1 | 2 = 0): string {
  const prec = c.k === 'or' ? 0 : c.k === 'and' ? 1 : 2;
  let s: string;
  if (c.k === 'or' || c.k === 'and') s = c.cs.map((x) => renderMin(x, (prec + 1) as 1 | 2)).join(` ${c.k} `);
  else if (c.k === 'not') s = `not ${renderMin(c.c, 2)}`;
  else s = renderFull(c);
  return prec < outer ? `(${s})` : s;
}

// ---------------------------------------------------------------------------------------------------
// Generators

const NAMES = ['a', 'b', 'n', 's', 'flag', 'items', 'obj', '__proto__', 'constructor'];
const INDEXES = ['0', '1', '2'];
const segsArb = fc
  .tuple(fc.constantFrom(...NAMES), fc.array(fc.constantFrom(...NAMES, ...INDEXES), { maxLength: 2 }))
  .map(([h, t]) => [h, ...t]);
const pathArb = segsArb.map((segs): Operand => ({ k: 'path', segs }));

const NUMBERS = [0, -0, 1, -1, 2, 2.5, -0.5, 100, 1e21, 1e-7, 9007199254740993, 0.1];
const numArb = fc.oneof(fc.constantFrom(...NUMBERS), fc.integer({ min: -3, max: 3 }));
// Strings that stress code-unit order and escaping: astral characters, U+FFFF, lone surrogates, quotes.
const CHARS = ['a', 'b', 'A', ' ', '"', "'", '\\', '\n', '\u0000', 'é', '\uFFFF', '\u{1F600}', '\uD800', '\uDFFF'];
const strArb = fc.array(fc.constantFrom(...CHARS), { maxLength: 3 }).map((cs) => cs.join(''));
const litArb: fc.Arbitrary<Lit> = fc.oneof(fc.constant(null), fc.boolean(), numArb, strArb);
const orderLitArb: fc.Arbitrary<Lit> = fc.oneof(numArb, strArb);
const operandArb = fc.oneof(
  { weight: 3, arbitrary: pathArb },
  { weight: 2, arbitrary: litArb.map((v): Operand => ({ k: 'lit', v })) },
);
const orderOperandArb = fc.oneof(
  { weight: 3, arbitrary: pathArb },
  { weight: 2, arbitrary: orderLitArb.map((v): Operand => ({ k: 'lit', v })) },
);

/** Two operands, at least one of them a path (two constants do not compile). */
function pairArb(side: fc.Arbitrary<Operand>): fc.Arbitrary<[Operand, Operand]> {
  return fc.tuple(side, side).filter(([l, r]) => l.k === 'path' || r.k === 'path');
}

const condArb: fc.Arbitrary<Cond> = fc.letrec<{ c: Cond }>((tie) => ({
  c: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    segsArb.map((segs): Cond => ({ k: 'bare', segs })),
    fc.boolean().map((v): Cond => ({ k: 'const', v })),
    fc
      .tuple(fc.constantFrom('==' as const, '!=' as const), pairArb(operandArb))
      .map(([op, [l, r]]): Cond => ({ k: 'eq', op, l, r })),
    fc
      .tuple(fc.constantFrom<OrderOp>('<', '<=', '>', '>='), pairArb(orderOperandArb))
      .map(([op, [l, r]]): Cond => ({ k: 'ord', op, l, r })),
    fc.tuple(segsArb, fc.array(litArb, { maxLength: 4 })).map(([x, items]): Cond => ({ k: 'inList', x, items })),
    fc.tuple(operandArb, segsArb).map(([x, arr]): Cond => ({ k: 'inPath', x, arr })),
    tie('c').map((c): Cond => ({ k: 'not', c })),
    fc
      .tuple(fc.constantFrom('and' as const, 'or' as const), fc.array(tie('c'), { minLength: 2, maxLength: 3 }))
      .map(([k, cs]): Cond => ({ k, cs })),
  ),
})).c;

// Argument values of every JSON type (and so, across the paths, every cross-type pairing), nested so
// that dotted and indexed paths find something, or nothing.
const leafArb: fc.Arbitrary<JsonValue> = fc.oneof(fc.constant(null), fc.boolean(), numArb, strArb);
const valueArb: fc.Arbitrary<JsonValue> = fc.letrec<{ v: JsonValue }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    leafArb,
    leafArb,
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...NAMES, ...INDEXES), tie('v'), { maxKeys: 4 }) as fc.Arbitrary<JsonObject>,
  ),
})).v;
// Through JSON text, as a request body arrives (so `__proto__` is an own data member).
const argsArb: fc.Arbitrary<JsonObject> = fc
  .dictionary(fc.constantFrom(...NAMES), valueArb, { maxKeys: 7 })
  .map((o) => JSON.parse(JSON.stringify(o)) as JsonObject);

// ---------------------------------------------------------------------------------------------------

describe('differential: compiled conditions agree with the reference evaluator (three-valued)', () => {
  it('on random well-typed conditions over random arguments (missing and cross-type values included)', () => {
    const seen = { [String(true)]: 0, [String(false)]: 0, [U]: 0 };
    fc.assert(
      fc.property(condArb, fc.array(argsArb, { minLength: 1, maxLength: 4 }), (cond, argsList) => {
        const source = renderFull(cond);
        const compiled = compileCondition(source); // well-typed by construction: must compile
        for (const args of argsList) {
          const want = refEval(cond, args);
          seen[String(want)]!++;
          expect(compiled.evaluate(on(args)), `${source} on ${JSON.stringify(args)}`).toBe(want);
          expect(compiled.explain(on(args)).truth).toBe(want);
        }
      }),
      { numRuns: runs(4000) },
    );
    // Not vacuous: every outcome occurred plenty of times (more than once per ten runs).
    for (const [outcome, n] of Object.entries(seen)) expect(n, outcome).toBeGreaterThan(runs(4000) / 10);
  });

  it('precedence: the minimally parenthesized form means the same as the fully parenthesized one', () => {
    fc.assert(
      fc.property(condArb, argsArb, (cond, args) => {
        const min = renderMin(cond);
        expect(compileCondition(min).evaluate(on(args)), `${min} vs ${renderFull(cond)}`).toBe(refEval(cond, args));
      }),
      { numRuns: runs(2000) },
    );
  });

  it('comparisons against a path that holds the other type, or nothing, are never true or false', () => {
    const values: [string, JsonValue | undefined][] = [
      ['missing', undefined],
      ['null', null],
      ['bool', true],
      ['num', 5],
      ['str', '5'],
      ['arr', [5]],
      ['obj', { v: 5 }],
    ];
    for (const [name, v] of values) {
      const args: JsonObject = v === undefined ? {} : { x: v };
      for (const source of ['x > 1', 'x < "1"', 'x == 5', 'x != "5"', 'x in [5, 6]', 'x']) {
        const want = refEval(parseRef(source), args);
        expect(compileCondition(source).evaluate(on(args)), `${source} with x ${name}`).toBe(want);
      }
    }
  });

  /** The handful of sources above, as reference ASTs. */
  function parseRef(source: string): Cond {
    const x: Operand = { k: 'path', segs: ['x'] };
    const table: Record<string, Cond> = {
      'x > 1': { k: 'ord', op: '>', l: x, r: { k: 'lit', v: 1 } },
      'x < "1"': { k: 'ord', op: '<', l: x, r: { k: 'lit', v: '1' } },
      'x == 5': { k: 'eq', op: '==', l: x, r: { k: 'lit', v: 5 } },
      'x != "5"': { k: 'eq', op: '!=', l: x, r: { k: 'lit', v: '5' } },
      'x in [5, 6]': { k: 'inList', x: ['x'], items: [5, 6] },
      x: { k: 'bare', segs: ['x'] },
    };
    return table[source]!;
  }
});

// ---------------------------------------------------------------------------------------------------

/** compileCondition's contract: a CompiledCondition, or a ConditionError with a code and a column inside the source. */
function compileOrError(source: string): CompiledCondition | ConditionError {
  try {
    return compileCondition(source);
  } catch (err) {
    if (!(err instanceof ConditionError))
      throw new Error(`not a ConditionError for ${JSON.stringify(source)}: ${String(err)}`);
    expect(['syntax', 'type', 'secret_path', 'too_long', 'too_deep']).toContain(err.code);
    expect(Number.isInteger(err.column)).toBe(true);
    expect(err.column).toBeGreaterThanOrEqual(1);
    expect(err.column).toBeLessThanOrEqual(Math.max(source.length, 4096) + 1);
    return err;
  }
}

// Mutations a typo, a merge conflict or an attacker makes to a valid condition.
const FRAGMENTS = [
  '(',
  ')',
  '[',
  ']',
  ',',
  '.',
  '..',
  '"',
  "'",
  '\\',
  '==',
  '=',
  '!',
  '!=',
  '<',
  '>=',
  ' and ',
  ' or ',
  'not ',
  ' in ',
  'true',
  'false',
  'null',
  '1e999',
  '-',
  '0.',
  '00',
  '1.2.3',
  'a.0.b',
  '__proto__',
  'constructor.constructor',
  'password',
  'apiKey',
  '\u0000',
  '\n',
  '\u2028',
  '\uD800',
  'é',
  '\u{1F600}',
  '()',
  '[]',
  '"\\u12"',
  '"\\x41"',
  '$',
  '{',
  '}',
  ';',
  'a(b)',
  '`',
  '#',
];
type Mutation = (s: string) => string;
const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.tuple(fc.nat(), fc.constantFrom(...FRAGMENTS)).map(
    ([at, frag]): Mutation =>
      (s) =>
        s.slice(0, at % (s.length + 1)) + frag + s.slice(at % (s.length + 1)),
  ),
  fc.tuple(fc.nat(), fc.nat({ max: 6 })).map(
    ([at, n]): Mutation =>
      (s) =>
        s.slice(0, at % (s.length + 1)) + s.slice((at % (s.length + 1)) + n),
  ),
  fc.tuple(fc.nat(), fc.nat({ max: 8 })).map(
    ([at, n]): Mutation =>
      (s) => {
        const i = at % (s.length + 1);
        return s.slice(0, i) + s.slice(i, i + n) + s.slice(i);
      },
  ),
  fc.tuple(fc.nat(), fc.string({ unit: 'binary', minLength: 1, maxLength: 2 })).map(
    ([at, ch]): Mutation =>
      (s) => {
        const i = at % (s.length + 1);
        return s.slice(0, i) + ch + s.slice(i + 1);
      },
  ),
  fc.nat({ max: 200 }).map(
    (n): Mutation =>
      (s) =>
        `${'('.repeat(n)}${s}${')'.repeat(n)}`,
  ),
  fc.nat({ max: 200 }).map(
    (n): Mutation =>
      (s) =>
        `${'not '.repeat(n)}${s}`,
  ),
  fc.nat({ max: 5000 }).map(
    (n): Mutation =>
      (s) =>
        `${s} or a == "${'x'.repeat(n)}"`,
  ),
);

describe('fuzzer: any mutation of a valid condition compiles or throws ConditionError, and evaluation is total', () => {
  it('on thousands of mutated conditions', () => {
    let compiled = 0;
    let refused = 0;
    fc.assert(
      fc.property(condArb, fc.array(mutationArb, { minLength: 1, maxLength: 4 }), argsArb, (cond, mutations, args) => {
        const source = mutations.reduce((s, m) => m(s), renderFull(cond));
        const result = compileOrError(source);
        if (result instanceof ConditionError) {
          refused++;
          // Errors never echo long runs of the source (a pasted secret would be printed at load).
          expect(result.message.length).toBeLessThan(400);
          return;
        }
        compiled++;
        const t = result.evaluate(on(args));
        expect([true, false, U]).toContain(t);
        expect(result.explain(on(args)).truth).toBe(t);
      }),
      { numRuns: runs(5000) },
    );
    // Both sides are well represented: over one run in twenty compiles, over one in five is refused.
    expect(compiled).toBeGreaterThan(runs(5000) / 20);
    expect(refused).toBeGreaterThan(runs(5000) / 5);
  });

  it('on random token soup of the grammar (up to 400 tokens, beyond the nesting bound)', () => {
    const token = fc.constantFrom(...FRAGMENTS, 'a', 'b.c', 'items.0', '1', '-2.5e3', '"s"', "'t'", ' ');
    fc.assert(
      fc.property(fc.array(token, { maxLength: 400 }), fc.array(argsArb, { maxLength: 2 }), (tokens, argsList) => {
        const result = compileOrError(tokens.join(''));
        if (result instanceof ConditionError) return;
        for (const args of argsList) expect([true, false, U]).toContain(result.evaluate(on(args)));
      }),
      { numRuns: runs(3000) },
    );
  });

  it('inputs at and past the size bounds: ConditionError, never a RangeError, and quickly', () => {
    const started = performance.now();
    for (const source of [
      '('.repeat(100_000),
      `${'not '.repeat(20_000)}a`,
      `a in [${'1, '.repeat(50_000)}1]`,
      `"${'\\u0041'.repeat(10_000)}" == a`,
      'a'.repeat(100_000),
      `${'a.'.repeat(2_000)}a == 1`,
      '[['.repeat(5_000),
      `a == ${'9'.repeat(400)}`,
      `a == 1e${'9'.repeat(400)}`,
    ]) {
      const r = compileOrError(source);
      if (!(r instanceof ConditionError)) expect([true, false, U]).toContain(r.evaluate(on({ a: 1 })));
    }
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
