import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  approvalHash,
  approvalHashText,
  CanonicalError,
  canonicalize,
  isDefaultShape,
  sha256,
} from '../../src/json/canonical.js';
import { parseJson } from '../../src/json/parse.js';
import { copyMember, isJsonObject, numberLexeme, setNumberLexeme } from '../../src/json/value.js';
import type { JsonObject, JsonValue } from '../../src/json/value.js';
import { referenceCanonical, utf8 } from './helpers.js';

interface Vector {
  name: string;
  input: string;
  canonical: string;
  sha256: string;
  approval?: boolean;
  hash?: string;
}

const dir = new URL('../fixtures/canonical/', import.meta.url);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();
const vectors: Vector[] = files.map((f) => JSON.parse(readFileSync(new URL(f, dir), 'utf8')) as Vector);
const byName = new Map(vectors.map((v) => [v.name, v]));

const hex = (text: string): string => 'sha256:' + createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex');

function canonicalError(value: unknown): CanonicalError {
  try {
    canonicalize(value as JsonValue); // deliberately not a JsonValue
  } catch (e) {
    if (e instanceof CanonicalError) return e;
    throw e;
  }
  throw new Error('expected a CanonicalError');
}

describe('canonical test vectors (test/fixtures/canonical)', () => {
  it('has the vectors test/fixtures/canonical/README.md promises', () => {
    expect(files.length).toBeGreaterThanOrEqual(20);
    expect(vectors.filter((v) => v.approval === true).length).toBeGreaterThanOrEqual(3);
    for (const [f, v] of files.map((f, n) => [f, vectors[n]] as const)) {
      expect(f).toBe(`${v?.name}.json`);
      expect(v?.sha256).toMatch(/^sha256:[0-9a-f]{64}$/);
    }
  });

  describe.each(vectors.map((v) => [v.name, v] as const))('%s', (_name, v) => {
    it('canonicalizes the input to the expected text', () => {
      expect(canonicalize(parseJson(v.input))).toBe(v.canonical);
      expect(canonicalize(parseJson(utf8(v.input)))).toBe(v.canonical);
    });

    it('agrees with an independent reference canonicalizer', () => {
      expect(referenceCanonical(v.input)).toBe(v.canonical);
    });

    it('has the SHA-256 of the canonical text', () => {
      expect(hex(v.canonical)).toBe(v.sha256);
      expect(sha256(v.canonical)).toBe(v.sha256);
    });

    it('is a fixed point: the canonical text canonicalizes to itself', () => {
      expect(canonicalize(parseJson(v.canonical))).toBe(v.canonical);
      expect(() => JSON.parse(v.canonical) as unknown).not.toThrow();
    });

    if (v.approval === true) {
      it('has the approval hash', () => {
        const o = parseJson(v.input) as JsonObject;
        const { tool, args } = o;
        if (typeof tool !== 'string' || !isJsonObject(args)) throw new Error('bad vector');
        const shapeOf = (r: JsonValue | undefined) => {
          if (!isJsonObject(r)) throw new Error('bad vector');
          const { kind, capability, presentation, approvers, quorum, separate_from_requester: separation } = r;
          if (typeof kind !== 'string' || !isJsonObject(capability) || !isJsonObject(presentation))
            throw new Error('bad vector');
          // Who may answer, when the requirement narrows it (docs/spec.md section 4.3).
          return {
            kind,
            capability,
            presentation,
            ...(isJsonObject(approvers) ? { approvers: approvers as { roles?: string[] } } : {}),
            ...(typeof quorum === 'number' ? { quorum } : {}),
            ...(typeof separation === 'string' ? { separate_from_requester: separation } : {}),
          };
        };
        // One requirement: {tool, args, kind, capability, presentation}; several: {tool, args, requirements}.
        // With the request's `context`, when the vector has one.
        const context = isJsonObject(o.context) ? { context: o.context } : {};
        const input = Array.isArray(o.requirements)
          ? { tool, args, ...context, requirements: o.requirements.map(shapeOf) }
          : { tool, args, ...context, ...shapeOf(o) };
        expect(approvalHash(input)).toBe(v.hash);
        expect(v.hash).toBe(hex(v.canonical));
      });
    }
  });

  it('pins the properties the vectors exist for', () => {
    const get = (name: string): Vector => {
      const v = byName.get(name);
      if (v === undefined) throw new Error(`missing vector ${name}`);
      return v;
    };
    // U+1F600 (high surrogate D83D) sorts before U+E000 and U+FB01: UTF-16 order, not code point order.
    expect(get('key-order-utf16').canonical).toBe('{"a":4,"z":5,"\u{1F600}":2,"\uE000":1,"\uFB01":3}');
    expect(get('surrogate-pair-raw').sha256).toBe(get('surrogate-pair-escaped').sha256);
    expect(get('numbers-one').sha256).not.toBe(get('numbers-one-point-zero').sha256);
    expect(get('approval-custom-shape').hash).not.toBe(get('approval-changed-presentation').hash);
    expect(get('string-specials-no-html-escaping').canonical).toContain('&&');
    // Two requirements are hashed in their order, each of them: neither the first alone nor another order.
    expect(get('approval-two-requirements').hash).not.toBe(get('approval-custom-shape').hash);
    expect(get('approval-two-requirements').hash).not.toBe(get('approval-two-requirements-reordered').hash);
    // Who may answer is hashed, in canonical key order around the shape's own keys.
    expect(get('approval-approvers-quorum').canonical).toMatch(/^\{"approvers":\{"roles":\["finance"\],"teams":/);
    expect(get('approval-approvers-quorum').canonical).toContain(
      '"presentation":{"amount":10500.00,"order":"A-17"},"quorum":2,"separate_from_requester":"team","tool"',
    );
    expect(get('approval-two-requirements-approvers').canonical).toContain(
      '{"approvers":{"users":["cfo"]},"capability":',
    );
  });
});

describe('canonicalize', () => {
  it('sorts keys by UTF-16 code units and drops whitespace', () => {
    const a = canonicalize(parseJson('{"b":1,"a":[1, 2],"é":"x","\\ue000":0,"\\ud83d\\ude00":0}'));
    const b = canonicalize(
      parseJson(' { "\\ud83d\\ude00":0, "\\u00e9" : "x" ,\n "a" : [1,2] , "\\uE000":0, "b" : 1 } '),
    );
    expect(a).toBe(b);
    expect(a).toBe('{"a":[1,2],"b":1,"é":"x","😀":0,"\ue000":0}');
  });

  it('sorts many keys (the builtin sort path) the same way as few', () => {
    const keys = Array.from(
      { length: 40 },
      (_, n) => String.fromCodePoint([0x61, 0xe000, 0x1f600, 0xfb01, 0x7a][n % 5] ?? 0x61) + n,
    );
    const shuffled = [...keys].sort(() => Math.random() - 0.5);
    const text = '{' + shuffled.map((k, n) => `${JSON.stringify(k)}:${n}`).join(',') + '}';
    expect(canonicalize(parseJson(text))).toBe(referenceCanonical(text));
  });

  it('escapes strings as RFC 8785 section 3.2.2.2', () => {
    let all = '';
    for (let c = 0; c < 0x20; c++) all += String.fromCharCode(c);
    expect(canonicalize(all)).toBe(
      '"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f' +
        '\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f"',
    );
    expect(canonicalize('"\\/<>&&\u2028\u2029\u007f\u0080é😀')).toBe('"\\"\\\\/<>&&\u2028\u2029\u007f\u0080é😀"');
    expect(canonicalize('x'.repeat(100) + '"')).toBe('"' + 'x'.repeat(100) + '\\""'); // long-string path
  });

  it('writes numbers as written, and String(n) otherwise', () => {
    expect(canonicalize(parseJson('[1.0,1,1e2,-0,0.1,0.10,123456789012345678901234567890]'))).toBe(
      '[1.0,1,1e2,-0,0.1,0.10,123456789012345678901234567890]',
    );
    expect(canonicalize(parseJson('{"n":1.0}'))).not.toBe(canonicalize(parseJson('{"n":1}')));
    expect(canonicalize({ a: -0, b: 1e21, c: 1e-7, d: 0.1 + 0.2, e: 5 })).toBe(
      '{"a":0,"b":1e+21,"c":1e-7,"d":0.30000000000000004,"e":5}',
    );
    expect(canonicalize(-0)).toBe('0');
  });

  it('keeps lexemes through parse → canonicalize at every depth', () => {
    const text = '{"a":{"b":[[1.50,{"c":2E3}]]},"d":[-0.0]}';
    expect(canonicalize(parseJson(text))).toBe('{"a":{"b":[[1.50,{"c":2E3}]]},"d":[-0.0]}');
  });

  it('ignores a lexeme that no longer denotes the value', () => {
    const v = parseJson('{"a":1.0,"b":[1e2]}') as JsonObject;
    v.a = 2;
    (v.b as JsonValue[])[0] = 100; // same value: the lexeme still applies
    expect(canonicalize(v)).toBe('{"a":2,"b":[1e2]}');
  });

  it('carries a lexeme with copyMember', () => {
    const args = parseJson('{"amount":150.0,"order":"A-1","toString":1}') as JsonObject;
    const capability: JsonObject = {};
    copyMember(args, 'amount', capability, 'amount');
    copyMember(args, 'missing', capability, 'missing');
    copyMember(args, 'constructor', capability, 'constructor'); // inherited, not a member
    expect(canonicalize(capability)).toBe('{"amount":150.0}');
    expect(numberLexeme(capability, 'amount')).toBe('150.0');
  });

  it('only accepts JSON number text as a lexeme', () => {
    const o: JsonObject = { n: 16 };
    expect(() => setNumberLexeme(o, 'n', '0x10')).toThrow(TypeError);
    expect(() => setNumberLexeme(o, 'n', '16 ')).toThrow(TypeError);
    setNumberLexeme(o, 'n', '16.0');
    expect(canonicalize(o)).toBe('{"n":16.0}');
  });

  it('handles an own __proto__ key and null-prototype objects', () => {
    const v = parseJson('{"b":1,"__proto__":{"x":[]}}');
    expect(canonicalize(v)).toBe('{"__proto__":{"x":[]},"b":1}');
    const bare = Object.create(null) as JsonObject;
    bare.z = true;
    bare.a = null;
    expect(canonicalize(bare)).toBe('{"a":null,"z":true}');
  });

  it('counts only own enumerable string keys', () => {
    const o: JsonObject = { a: 1 };
    Object.defineProperty(o, 'hidden', { value: 2, enumerable: false });
    (o as Record<symbol, unknown>)[Symbol('s')] = 3;
    expect(canonicalize(o)).toBe('{"a":1}');
  });

  it('writes literals and empty containers', () => {
    expect(canonicalize([true, false, null, {}, []])).toBe('[true,false,null,{},[]]');
  });
});

describe('canonicalize: errors', () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  class Point {
    x = 1;
  }
  const sparse: unknown[] = [1];
  sparse[2] = 3;

  it.each<[string, unknown, string]>([
    ['lone high surrogate', '\ud800', ''],
    ['lone low surrogate in an array', { a: ['x', 'a\udc00b'] }, '/a/1'],
    ['reversed pair', { s: '\udc00\ud800' }, '/s'],
    ['lone surrogate in a key (pointer names the object)', { o: { '\ud800k': 1 } }, '/o'],
    ['NaN', { n: NaN }, '/n'],
    ['Infinity', [Infinity], '/0'],
    ['-Infinity', -Infinity, ''],
    ['undefined', { u: undefined }, '/u'],
    ['a Date', { d: new Date(0) }, '/d'],
    ['a bigint', { b: 1n }, '/b'],
    ['a function', [() => 1], '/0'],
    ['a symbol', { s: Symbol('x') }, '/s'],
    ['a class instance', { p: new Point() }, '/p'],
    ['a Map', new Map(), ''],
    ['a hole in a sparse array', sparse, '/1'],
    ['a cycle', cyclic, '/self'.repeat(1000)],
  ])('%s', (_name, value, pointer) => {
    const e = canonicalError(value);
    expect(e.pointer).toBe(pointer);
    expect(e.name).toBe('CanonicalError');
  });

  it("an error that is not the canonical form's own passes through unchanged, from an object or an array", () => {
    const boom = new Error('a getter failed');
    const throwing = Object.defineProperty({}, 'k', {
      enumerable: true,
      get() {
        throw boom;
      },
    }) as JsonObject;
    expect(() => canonicalize({ o: throwing })).toThrow(boom);
    expect(() => canonicalize([[throwing]] as unknown as JsonValue)).toThrow(boom);
  });

  it('never quotes the offending value', () => {
    const e = canonicalError({ k: 'SECRET-VALUE-123\ud800' });
    expect(e.message).not.toContain('SECRET');
    expect(e.message).toContain('/k');
  });
});

describe('sha256 and approvalHash', () => {
  it('hashes the UTF-8 text', () => {
    expect(sha256('')).toBe('sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256('abc')).toBe('sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256('é😀')).toBe(hex('é😀'));
  });

  it('is sha256 of the canonical {args, capability, kind, presentation, tool}', () => {
    const args = parseJson('{"order":"A-17","amount":150.0}') as JsonObject;
    const input = { tool: 'refund', args, kind: 'refund_over_cap', capability: { order: 'A-17' }, presentation: {} };
    expect(approvalHash(input)).toBe(
      hex(
        '{"args":{"amount":150.0,"order":"A-17"},"capability":{"order":"A-17"},"kind":"refund_over_cap","presentation":{},"tool":"refund"}',
      ),
    );
  });

  it('changes when any part changes, including the presentation', () => {
    const args: JsonObject = { order: 'A-17' };
    const base = { tool: 'refund', args, kind: 'confirm', capability: {}, presentation: { note: 'a' } };
    const hashes = new Set([
      approvalHash(base),
      approvalHash({ ...base, presentation: { note: 'b' } }),
      approvalHash({ ...base, capability: { order: 'A-17' } }),
      approvalHash({ ...base, kind: 'remote_mutation' }),
      approvalHash({ ...base, tool: 'refund2' }),
      approvalHash({ ...base, args: { order: 'A-18' } }),
    ]);
    expect(hashes.size).toBe(6);
  });

  it('gives the same hash when the default {tool, args} shape shares the args object (the fast path)', () => {
    const args = parseJson(
      '{"order":"A-17","amount":150.0,"items":[{"sku":"X1","qty":1e0}],"note":"<&&>"}',
    ) as JsonObject;
    const tool = 'refund';
    for (const shaped of [
      { tool, args },
      { args, tool },
    ]) {
      const input = { tool, args, kind: 'remote_mutation', capability: shaped, presentation: { tool, args } };
      const slow = sha256(
        canonicalize({ args, capability: shaped, kind: 'remote_mutation', presentation: { tool, args }, tool }),
      );
      expect(approvalHash(input)).toBe(slow);
    }
    // A look-alike with a copy of the args (not the same object) takes the general path, same text.
    const copy = parseJson(
      '{"order":"A-17","amount":150.0,"items":[{"sku":"X1","qty":1e0}],"note":"<&&>"}',
    ) as JsonObject;
    expect(approvalHash({ tool, args, kind: 'k', capability: { tool, args: copy }, presentation: {} })).toBe(
      sha256(canonicalize({ args, capability: { tool, args: copy }, kind: 'k', presentation: {}, tool })),
    );
  });

  it('hashes long arguments piece by piece to the same value as the whole text (one and several requirements)', () => {
    const args = parseJson(`{"blob":"${'é'.repeat(40_000)}","n":1.0}`) as JsonObject;
    const tool = 'export';
    const whole = { tool, args };
    const one = { tool, args, kind: 'confirm', capability: whole, presentation: whole };
    expect(approvalHash(one)).toBe(
      sha256(canonicalize({ args, capability: whole, kind: 'confirm', presentation: whole, tool })),
    );
    const requirements = [
      { kind: 'confirm', capability: whole, presentation: whole },
      { kind: 'pii', capability: {}, presentation: { n: 1 } },
    ];
    expect(approvalHash({ tool, args, requirements })).toBe(sha256(canonicalize({ args, requirements, tool })));
  });

  it('reports where a part cannot be hashed', () => {
    let caught: unknown;
    try {
      approvalHash({ tool: 'x', args: { a: NaN }, kind: 'k', capability: {}, presentation: {} });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(CanonicalError);
    expect((caught as CanonicalError).pointer).toBe('/args/a');
  });
});

// Each row below pins one check that mutation testing (docs/operations.md, Mutation testing) found
// no test noticing when it was changed.
describe('canonical edges', () => {
  function thrown(f: () => unknown): unknown {
    try {
      f();
    } catch (e) {
      return e;
    }
    throw new Error('expected a throw');
  }

  it.each<[string, unknown, string]>([
    ['lone surrogate in a string at the root', '\ud800', ''],
    ['lone surrogate in a key at /o', { o: { '\ud800k': 1 } }, '/o'],
    ['non-finite number at /n', { n: Number.NaN }, '/n'],
    ['not a plain object at /d', { d: new Date(0) }, '/d'],
    ['not a JSON value (bigint) at /b', { b: 1n }, '/b'],
    ['not a JSON value (undefined) at /0', [undefined], '/0'],
  ])('says %j', (message, value, pointer) => {
    const e = canonicalError(value);
    expect(e.message).toBe(message);
    expect(e.pointer).toBe(pointer);
  });

  it('stops a cycle through an array at the depth bound', () => {
    const loop: unknown[] = [];
    loop.push(loop);
    const e = canonicalError(loop);
    expect(e.message).toBe(`nesting too deep (or a cycle) at ${'/0'.repeat(1000)}`);
  });

  it('quotes a string of one quote or one backslash', () => {
    expect(canonicalize('"')).toBe('"\\""');
    expect(canonicalize('\\')).toBe('"\\\\"');
    expect(canonicalize({ '"': '\\' })).toBe('{"\\"":"\\\\"}');
  });

  it('lets an error that is not its own pass unchanged', () => {
    const boom = new Error('boom');
    const o = Object.defineProperty({}, 'x', {
      enumerable: true,
      get() {
        throw boom;
      },
    }) as JsonObject;
    expect(thrown(() => canonicalize(o))).toBe(boom);
    expect(thrown(() => canonicalize([o] as JsonValue))).toBe(boom);
  });

  it('names the part of an approval that cannot be hashed', () => {
    const args: JsonObject = { a: 1 };
    const ok = { kind: 'k', capability: {}, presentation: {} };
    const bad = { x: Number.NaN };
    const cases: [input: Parameters<typeof approvalHash>[0], pointer: string][] = [
      [{ tool: '\ud800', args, ...ok }, '/tool'],
      [{ tool: 't', args, ...ok, context: bad }, '/context/x'],
      [{ tool: 't', args, ...ok, capability: bad }, '/capability/x'],
      [{ tool: 't', args, ...ok, presentation: bad }, '/presentation/x'],
      [{ tool: 't', args, ...ok, kind: '\ud800' }, '/kind'],
      [{ tool: 't', args, requirements: [ok, { ...ok, capability: bad }] }, '/requirements/1/capability/x'],
      [{ tool: 't', args, requirements: [ok, { ...ok, presentation: bad }] }, '/requirements/1/presentation/x'],
      [{ tool: 't', args, requirements: [{ ...ok, kind: '\ud800' }, ok] }, '/requirements/0/kind'],
    ];
    for (const [input, pointer] of cases) {
      const e = thrown(() => approvalHash(input));
      expect(e, pointer).toBeInstanceOf(CanonicalError);
      expect((e as CanonicalError).pointer).toBe(pointer);
    }
  });

  it('refuses an approval without a requirement', () => {
    const e = thrown(() => approvalHash({ tool: 't', args: {}, requirements: [] }));
    expect(e).toBeInstanceOf(RangeError);
    expect((e as Error).message).toBe('an approval needs at least one requirement');
  });

  it('hashes an empty context as no context, and any other context', () => {
    const base = { tool: 't', args: { a: 1 }, kind: 'k', capability: {}, presentation: {} };
    expect(approvalHash({ ...base, context: {} })).toBe(approvalHash(base));
    expect(approvalHash({ ...base, context: { env: 'prod' } })).not.toBe(approvalHash(base));
    expect(approvalHashText({ ...base, context: { env: 'prod' } })).toBe(
      '{"args":{"a":1},"capability":{},"context":{"env":"prod"},"kind":"k","presentation":{},"tool":"t"}',
    );
  });

  it('takes the shortcut for the default shape only when it is exactly {args, tool} of this request', () => {
    const tool = 'refund';
    const args = parseJson('{"order":"A-17","n":1.0}') as JsonObject;
    expect(isDefaultShape({ args, tool }, tool, args)).toBe(true);
    expect(isDefaultShape({ tool, args }, tool, args)).toBe(true);
    const others: JsonObject[] = [
      { args, tool, x: 1 },
      { args: { order: 'A-18' }, tool },
      { args: parseJson('{"order":"A-17","n":1.0}') as JsonObject, tool },
      { args, tool: 'refund2' },
      { args },
    ];
    // Inherited args are not args (such an object is no JSON object, and is refused when hashed).
    expect(isDefaultShape(Object.assign(Object.create({ args }) as JsonObject, { x: 1, tool }), tool, args)).toBe(
      false,
    );
    for (const shape of others) {
      expect(isDefaultShape(shape, tool, args)).toBe(false);
      // Whatever the shortcut decides, the hash is that of the whole canonical text.
      const input = { tool, args, kind: 'k', capability: shape, presentation: shape };
      expect(approvalHash(input)).toBe(
        sha256(canonicalize({ args, capability: shape, kind: 'k', presentation: shape, tool })),
      );
    }
  });
});
