import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { setOwn, type JsonObject, type JsonValue } from '../../src/json/value.js';
import { on } from '../helpers/condition.js';
import { compileCondition, ConditionError, type CompiledCondition } from '../../src/policy/condition/compile.js';
import { runs } from '../helpers/runs.js';

const U = 'undecidable';

/** An object holding `__proto__` as an own data property, as JSON.parse makes it. */
function withProto(value: JsonValue, rest: JsonObject = {}): JsonObject {
  const o: JsonObject = { ...rest };
  Object.defineProperty(o, '__proto__', { value, enumerable: true, writable: true, configurable: true });
  return o;
}

describe('only own properties are readable', () => {
  const inherited = [
    'constructor',
    'toString',
    '__proto__',
    'hasOwnProperty',
    'valueOf',
    'isPrototypeOf',
    '__defineGetter__',
  ];

  it.each(inherited)('%s is MISSING on an ordinary object', (name) => {
    for (const source of [
      `${name} == null`,
      `${name} != null`,
      name,
      `${name} == "x"`,
      `x in ${name}`,
      `${name}.name == "Object"`,
    ]) {
      expect(compileCondition(source).evaluate(on({ x: 1 })), source).toBe(U);
      expect(compileCondition(source).explain(on({ x: 1 })).why, source).toContain(`\`${name}`);
    }
  });

  it('constructor.name and nested inherited names are MISSING', () => {
    expect(compileCondition('constructor.name == "Object"').evaluate(on({}))).toBe(U);
    expect(compileCondition('order.constructor.name == "Object"').evaluate(on({ order: {} }))).toBe(U);
    expect(compileCondition('s.length == 3').evaluate(on({ s: 'abc' }))).toBe(U); // strings have no members
    expect(compileCondition('s.0 == "a"').evaluate(on({ s: 'abc' }))).toBe(U);
  });

  it('a polluted Object.prototype is not seen', () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto.polluted = true;
    try {
      expect(compileCondition('polluted').evaluate(on({}))).toBe(U);
      expect(compileCondition('polluted == true').evaluate(on({}))).toBe(U);
      expect(compileCondition('__proto__.polluted').evaluate(on({}))).toBe(U);
      expect(compileCondition('a.polluted').evaluate(on({ a: {} }))).toBe(U);
      expect(compileCondition('a.0.polluted').evaluate(on({ a: [{}] }))).toBe(U);
    } finally {
      delete proto.polluted;
    }
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);
  });

  it('a __proto__ own key IS readable', () => {
    const args = withProto({ admin: true, n: 5 });
    expect(Object.getPrototypeOf(args)).toBe(Object.prototype); // still an ordinary object
    expect(compileCondition('__proto__.admin').evaluate(on(args))).toBe(true);
    expect(compileCondition('__proto__.n > 4').evaluate(on(args))).toBe(true);
    expect(compileCondition('__proto__ != null').evaluate(on(args))).toBe(true);
    expect(compileCondition('__proto__.toString == null').evaluate(on(args))).toBe(U);
    expect(compileCondition('__proto__.admin').evaluate(on({}))).toBe(U);
    const parsed = JSON.parse('{"__proto__": {"x": 1}}') as JsonObject;
    expect(compileCondition('__proto__.x == 1').evaluate(on(parsed))).toBe(true);
  });

  it('works on null-prototype objects', () => {
    const args = Object.create(null) as JsonObject;
    args.a = 1;
    expect(compileCondition('a == 1').evaluate(on(args))).toBe(true);
    expect(compileCondition('toString == null').evaluate(on(args))).toBe(U);
  });

  it('array length and methods are not readable segments', () => {
    const args = { items: [1, 2, 3] };
    expect(compileCondition('items.length == 3').evaluate(on(args))).toBe(U);
    expect(compileCondition('items.length > 0').evaluate(on(args))).toBe(U);
    expect(compileCondition('items.push == null').evaluate(on(args))).toBe(U);
    expect(compileCondition('items.3 == null').evaluate(on(args))).toBe(U);
    expect(compileCondition('items.2 == 3').evaluate(on(args))).toBe(true);
  });

  it('a sparse array hole is MISSING', () => {
    const items = [1, , 3] as unknown as JsonValue[];
    expect(compileCondition('items.1 == null').evaluate(on({ items }))).toBe(U);
  });
});

describe('nothing can be called', () => {
  it.each([
    'f(x)',
    'a.b()',
    'constructor.constructor("return 1")()',
    'toString()',
    'a.toString() == "x"',
    'eval("1")',
    'x == import("fs")',
  ])('%s is refused at load', (source) => {
    expect(() => compileCondition(source)).toThrow(ConditionError);
  });

  it('input that looks like code is only data', () => {
    const c = compileCondition('name == "bob"');
    for (const evil of [
      "') || true || ('",
      '${x}',
      '" || true || "',
      'bob" or true or "',
      '`${process.exit(1)}`',
      '__proto__',
    ]) {
      expect(c.evaluate(on({ name: evil }))).toBe(false);
      expect(c.explain(on({ name: evil })).why).not.toContain(evil);
    }
    // A literal that looks like code is data too.
    const d = compileCondition(`name == "') || true || ('"`);
    expect(d.evaluate(on({ name: 'bob' }))).toBe(false);
    expect(d.evaluate(on({ name: "') || true || ('" }))).toBe(true);
  });
});

describe('bounds', () => {
  it('refuses a 4097-character condition without a RangeError', () => {
    const err = captureError(() => compileCondition('a and '.repeat(682) + 'a == 1'));
    expect('a and '.repeat(682).length + 6).toBe(4098);
    expect(err).toBeInstanceOf(ConditionError);
    expect((err as ConditionError).code).toBe('too_long');
  });

  it('an unknown root is named clipped: a long one is never echoed whole', () => {
    const secret = `$sk_live_${'A'.repeat(400)}`;
    const err = captureError(() => compileCondition(`a == 1 or ${secret} == 1`));
    expect(err).toBeInstanceOf(ConditionError);
    expect((err as ConditionError).message).toContain(`unknown root \`$sk_live_${'A'.repeat(24)}…\``);
    expect((err as ConditionError).message).not.toContain('A'.repeat(40));
  });

  it('refuses deep nesting without a RangeError', () => {
    for (const source of [
      '('.repeat(2000) + 'a' + ')'.repeat(2000),
      'not '.repeat(1000) + 'a',
      '['.repeat(4000),
      '(not '.repeat(800),
    ]) {
      const err = captureError(() => compileCondition(source));
      expect(err, source.slice(0, 20)).toBeInstanceOf(ConditionError);
      expect(['too_deep', 'too_long', 'syntax']).toContain((err as ConditionError).code);
    }
    expect(
      (captureError(() => compileCondition('('.repeat(2000) + 'a' + ')'.repeat(2000))) as ConditionError).code,
    ).toBe('too_deep');
  });

  it('evaluates a long flat junction without deep recursion', () => {
    const source = Array.from({ length: 800 }, () => 'a').join(' or ');
    expect(source.length).toBeLessThanOrEqual(4096);
    expect(compileCondition(source).evaluate(on({ a: false }))).toBe(false);
    expect(compileCondition(Array.from({ length: 600 }, () => 'a').join(' and ')).evaluate(on({ a: true }))).toBe(true);
  });

  it('huge and deep ARGUMENTS are fine', () => {
    let deep: JsonValue = 'bottom';
    for (let i = 0; i < 10_000; i++) deep = { d: deep };
    const args: JsonObject = { deep, wide: Array.from({ length: 100_000 }, (_, i) => i), big: 'x'.repeat(1_000_000) };
    expect(compileCondition('deep.d.d.x == 1').evaluate(on(args))).toBe(U);
    expect(compileCondition('deep.d.d.d != null').evaluate(on(args))).toBe(true);
    expect(compileCondition('5 in wide').evaluate(on(args))).toBe(true);
    expect(compileCondition('big > "w"').evaluate(on(args))).toBe(true);
    expect(compileCondition('deep == 1').explain(on(args)).why).toBe(
      'undecidable: `deep` is an object, compared with a number',
    );
  });
});

describe('evaluation fails closed', () => {
  it('a throwing getter gives undecidable, never an exception', () => {
    const args = {} as JsonObject;
    Object.defineProperty(args, 'amount', {
      enumerable: true,
      get: () => {
        throw new Error('boom');
      },
    });
    const c = compileCondition('amount > 100 or true');
    expect(c.evaluate(on(args))).toBe(U);
    expect(c.explain(on(args))).toEqual({ truth: U, why: 'undecidable: the arguments could not be evaluated' });
  });

  it('a throwing proxy gives undecidable', () => {
    const args = new Proxy(
      {},
      {
        getOwnPropertyDescriptor: () => {
          throw new Error('trap');
        },
      },
    ) as JsonObject;
    expect(compileCondition('a == 1').evaluate(on(args))).toBe(U);
    expect(compileCondition('a == 1').explain(on(args)).truth).toBe(U);
  });

  it('values JSON cannot hold are undecidable, not compared', () => {
    const weird = { n: Number.NaN, i: Number.POSITIVE_INFINITY, f: () => 1, u: undefined } as unknown as JsonObject;
    for (const source of [
      'n == n',
      'n != 1',
      'n > 1',
      'i > 1',
      'f == null',
      'u == null',
      'n == null',
      'f',
      'n in [1]',
      '1 in f',
    ]) {
      expect(compileCondition(source).evaluate(on(weird)), source).toBe(U);
    }
  });

  it('non-object arguments do not throw', () => {
    for (const bad of [null, 1, 'x', [1], undefined] as unknown as JsonObject[]) {
      expect(compileCondition('a == 1').evaluate(on(bad))).toBe(U);
      expect(compileCondition('a == 1').explain(on(bad)).truth).toBe(U);
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// Property tests

const NAMES = ['a', 'b', 'c', 'items', 'x', 'n', '__proto__', 'constructor', 'toString', 'length', '0', '1'];
const segment = fc.constantFrom(...NAMES);
const pathArb = fc
  .tuple(
    fc.constantFrom('a', 'b', 'c', 'items', 'x', 'n', '__proto__', 'constructor', 'toString'),
    fc.array(segment, { maxLength: 3 }),
  )
  .map(([head, rest]) => [head, ...rest].join('.'));
const stringLit = fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s));
const numberLit = fc
  .oneof(fc.integer({ min: -5, max: 5 }), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }))
  .map((n) => JSON.stringify(n));
const scalarLit = fc.oneof(stringLit, numberLit, fc.constantFrom('true', 'false', 'null'));
const operand = fc.oneof({ weight: 3, arbitrary: pathArb }, { weight: 2, arbitrary: scalarLit });
const listLit = fc.array(scalarLit, { maxLength: 4 }).map((items) => `[${items.join(', ')}]`);

const conditionArb: fc.Arbitrary<string> = fc.letrec<{ cond: string }>((tie) => ({
  cond: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    pathArb,
    fc.constantFrom('true', 'false'),
    fc
      .tuple(pathArb, fc.constantFrom('==', '!=', '<', '<=', '>', '>='), operand)
      .map(([l, op, r]) => `${l} ${op} ${r}`),
    fc.tuple(operand, fc.oneof(listLit, pathArb)).map(([l, r]) => `${l} in ${r}`),
    tie('cond').map((c) => `not ${c}`),
    tie('cond').map((c) => `(${c})`),
    fc.tuple(tie('cond'), fc.constantFrom('and', 'or'), tie('cond')).map(([a, op, b]) => `(${a}) ${op} (${b})`),
  ),
})).cond;

const jsonLeaf = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -5, max: 5 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ maxLength: 4 }),
);
const jsonValue: fc.Arbitrary<JsonValue> = fc.letrec<{ v: JsonValue }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    jsonLeaf,
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...NAMES), tie('v'), { maxKeys: 4 }) as fc.Arbitrary<JsonObject>,
  ),
})).v;
// JSON.parse makes `__proto__` an own data property; go through it so the property test covers that.
const argsArb = fc
  .dictionary(fc.constantFrom(...NAMES), jsonValue, { maxKeys: 8 })
  .map((o) => JSON.parse(JSON.stringify(o)) as JsonObject);

function tryCompile(source: string): CompiledCondition | null {
  try {
    return compileCondition(source);
  } catch (err) {
    if (err instanceof ConditionError) return null;
    throw err;
  }
}

describe('property: compileCondition only ever throws ConditionError', () => {
  const alphabet = fc.constantFrom(
    ...'abcxyz019_. ()[],\'"\\=!<>-+eE\n\t'.split(''),
    'and ',
    'or ',
    'not ',
    ' in ',
    'true',
    'false',
    'null',
    '\\u00e9',
    '\\u',
    '__proto__',
    'é',
    '\u{1F600}',
    '\0',
  );
  it('on random token soup', () => {
    fc.assert(
      fc.property(
        fc.array(alphabet, { maxLength: 40 }).map((parts) => parts.join('')),
        (source) => {
          tryCompile(source);
        },
      ),
      { numRuns: runs(3000) },
    );
  });
  it('on arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 60 }), (source) => {
        tryCompile(source);
      }),
      { numRuns: runs(2000) },
    );
  });
  it('on well-formed conditions, which mostly compile', () => {
    let compiled = 0;
    fc.assert(
      fc.property(conditionArb, (source) => {
        if (tryCompile(source)) compiled++;
      }),
      { numRuns: runs(1000) },
    );
    expect(compiled).toBeGreaterThan((runs(1000) * 3) / 10); // over three in ten compile
  });
});

describe('property: evaluation never throws and explain agrees with evaluate', () => {
  it('on random conditions and random arguments', () => {
    fc.assert(
      fc.property(conditionArb, argsArb, (source, args) => {
        const c = tryCompile(source);
        if (c === null) return;
        const t = c.evaluate(on(args));
        expect([true, false, U]).toContain(t);
        const e = c.explain(on(args));
        expect(e.truth).toBe(t);
        expect(typeof e.why).toBe('string');
        expect(e.why.length).toBeGreaterThan(0);
      }),
      { numRuns: runs(3000) },
    );
  });

  it('not c is the Kleene negation of c', () => {
    fc.assert(
      fc.property(conditionArb, argsArb, (source, args) => {
        const c = tryCompile(source);
        const n = tryCompile(`not (${source})`);
        if (c === null || n === null) return;
        const t = c.evaluate(on(args));
        expect(n.evaluate(on(args))).toBe(t === U ? U : !t);
      }),
      { numRuns: runs(1000) },
    );
  });

  it('a string argument never appears in an explanation unless the condition spells it', () => {
    fc.assert(
      fc.property(
        conditionArb,
        fc.string({ minLength: 8, maxLength: 12 }).map((s) => `Q${s}Z`),
        (source, secret) => {
          const c = tryCompile(source);
          if (c === null || source.includes(secret)) return;
          const args: JsonObject = {};
          for (const k of NAMES) setOwn(args, k, secret);
          expect(c.explain(on(args)).why).not.toContain(secret);
        },
      ),
      { numRuns: runs(500) },
    );
  });
});

function captureError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}
