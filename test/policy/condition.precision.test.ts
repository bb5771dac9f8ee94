// Numbers in conditions compare exactly, as written (audit F2). Request arguments come through the
// strict JSON parser, which keeps each number's lexeme beside its double; these tests go through
// parseJson so the lexeme path is the one exercised. Policy test files (YAML/TOML) give plain objects
// without lexemes, whose doubles String() writes exactly.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../src/json/parse.js';
import type { JsonObject } from '../../src/json/value.js';
import { compileCondition, ConditionError, type Truth } from '../../src/policy/condition/compile.js';

const U = 'undecidable';

/** Arguments as the service gets them: parsed from the request body, lexemes kept. */
function body(json: string): JsonObject {
  return parseJson(json) as JsonObject;
}

function ev(source: string, args: JsonObject): Truth {
  const c = compileCondition(source);
  const t = c.evaluate(args);
  expect(c.explain(args).truth, `explain of ${source}`).toBe(t); // the two must never disagree
  return t;
}

// An exponent of more digits than json/decimal.ts compares: the parser accepts it (the double is 0).
const ABSURD = '1e-99999999999999999999';

describe('the audit cases, through parseJson', () => {
  const table: [source: string, json: string, want: Truth][] = [
    // An allow-list of 64-bit ids: neighbours within the double's spacing are not on it.
    ['channel_id in [1234567890123456789]', '{"channel_id":1234567890123456800}', false],
    ['channel_id in [1234567890123456789]', '{"channel_id":1234567890123456700}', false],
    ['channel_id in [1234567890123456789]', '{"channel_id":1234567890123456789}', true],
    ['channel_id in [1, 1234567890123456789]', '{"channel_id":1234567890123456788}', false],
    ['channel_id == 1234567890123456789', '{"channel_id":1234567890123456800}', false],
    ['channel_id != 1234567890123456789', '{"channel_id":1234567890123456800}', true],
    // A confirm threshold: 1 ETH + 64 wei is over 1 ETH.
    ['wei > 1000000000000000000', '{"wei":1000000000000000064}', true],
    ['wei > 1000000000000000000', '{"wei":1000000000000000000}', false],
    ['wei > 1e18', '{"wei":1000000000000000001}', true],
    ['wei >= 1000000000000000001', '{"wei":1000000000000000000}', false],
    ['n > 9007199254740992', '{"n":9007199254740993}', true],
    ['n <= 9007199254740992', '{"n":9007199254740993}', false],
    ['n == 9007199254740993', '{"n":9007199254740992}', false],
    // The same value written differently is equal.
    ['n == 100', '{"n":1e2}', true],
    ['n == 100', '{"n":100.0}', true],
    ['n == 1e2', '{"n":100}', true],
    ['n == 100.000', '{"n":1E+2}', true],
    ['n in [5, 100]', '{"n":0.1e3}', true],
    ['n == 0', '{"n":-0}', true],
    ['n == -0', '{"n":0.0}', true],
    ['n < 0', '{"n":-0}', false],
    // Below the smallest double: 2e-324 parses to 0 but is not 0.
    ['n > 0', '{"n":2e-324}', true],
    ['n == 0', '{"n":2e-324}', false],
    ['n < 1e-323', '{"n":2e-324}', true],
    ['n > 2e-324', '{"n":0}', false],
    // Fractions that doubles cannot hold.
    ['n > 0.1', '{"n":0.10000000000000000001}', true],
    ['n == 0.3', '{"n":0.30000000000000000000}', true],
  ];
  it.each(table)('%s with %s is %s', (source, json, want) => {
    expect(ev(source, body(json))).toBe(want);
  });

  it('reads lexemes at any depth and inside arrays', () => {
    const args = body('{"order":{"items":[{"id":1234567890123456800}]},"ids":[7,1234567890123456800,-0]}');
    expect(ev('order.items.0.id == 1234567890123456789', args)).toBe(false);
    expect(ev('order.items.0.id == 1234567890123456800', args)).toBe(true);
    expect(ev('ids.1 > 1234567890123456799', args)).toBe(true);
    expect(ev('1234567890123456789 in ids', args)).toBe(false);
    expect(ev('1234567890123456800 in ids', args)).toBe(true);
    expect(ev('0 in ids', args)).toBe(true);
    expect(ev('ids.0 in ids', args)).toBe(true);
  });

  it('compares two argument numbers exactly', () => {
    expect(ev('a < b', body('{"a":9007199254740992,"b":9007199254740993}'))).toBe(true);
    expect(ev('a == b', body('{"a":9007199254740992,"b":9007199254740993}'))).toBe(false);
    expect(ev('a == b', body('{"a":1e2,"b":100.0}'))).toBe(true);
  });
});

describe('a number that cannot be compared is undecidable', () => {
  const args = body(`{"n":${ABSURD},"ns":[${ABSURD}],"mixed":[${ABSURD},5],"zero":0e99999999999999999999}`);

  it('in every comparison, as a comparison across types is', () => {
    for (const source of ['n > 0', 'n < 1', 'n == 0', 'n != 0', 'n in [0, 1]', 'n in ["a"]', 'n in ns', '0 in ns', 'n == zero', 'zero == n']) {
      expect(ev(source, args), source).toBe(U);
    }
  });

  it('but it is still a number: present, not null, and a match elsewhere in a list wins', () => {
    expect(ev('n == null', args)).toBe(false);
    expect(ev('n != null', args)).toBe(true);
    expect(ev('n in []', args)).toBe(false);
    expect(ev('5 in mixed', args)).toBe(true);
    expect(ev('6 in mixed', args)).toBe(U);
    expect(ev('null in ns', args)).toBe(false);
    // A zero's exponent does not matter.
    expect(ev('zero == 0', args)).toBe(true);
  });

  it('explain says why without quoting the number', () => {
    const why = (source: string): string => compileCondition(source).explain(args).why;
    expect(why('n > 0')).toBe('undecidable: `n` is a number with an exponent too long to compare');
    expect(why('0 < n')).toBe('undecidable: `n` is a number with an exponent too long to compare');
    expect(why('n in [0, 1]')).toBe('undecidable: `n` is a number with an exponent too long to compare');
    expect(why('6 in mixed')).toBe('undecidable: `mixed` holds a number with an exponent too long to compare');
    for (const source of ['n > 0', 'n in ns', '0 in ns', '6 in mixed']) expect(why(source)).not.toContain('999');
  });

  it('fails closed through not, and, or', () => {
    expect(ev('not (n > 0)', args)).toBe(U);
    expect(ev('n > 0 or zero == 0', args)).toBe(true);
    expect(ev('n > 0 and zero == 1', args)).toBe(false);
    expect(ev('n > 0 and zero == 0', args)).toBe(U);
  });
});

describe('literals at load', () => {
  it('compile when a double cannot hold them, and keep their exact value', () => {
    for (const source of ['a == 1234567890123456789', 'a > 2e-324', 'a in [0.1, 9007199254740993]', 'a < 1.00000000000000000001']) {
      expect(() => compileCondition(source), source).not.toThrow();
    }
    expect(ev('a < 1.00000000000000000001', { a: 1 })).toBe(true);
    expect(ev('a > 2e-324', { a: 0 })).toBe(false);
  });

  it('are printed in explanations as written, not as their nearest double', () => {
    const c = compileCondition('channel_id in [1234567890123456789, 1e2]');
    expect(c.explain(body('{"channel_id":1234567890123456800}')).why).toBe('channel_id in [1234567890123456789, 1e2] is false');
    expect(compileCondition('wei > 1000000000000000000').explain(body('{"wei":1000000000000000064}')).why).toBe(
      'wei > 1000000000000000000 is true',
    );
  });

  it('are still refused out of a double\'s range, and refused with an exponent too long to compare', () => {
    const refusal = (source: string): ConditionError => {
      try {
        compileCondition(source);
      } catch (err) {
        if (err instanceof ConditionError) return err;
        throw err;
      }
      throw new Error(`expected ${source} to be refused`);
    };
    expect(refusal('a == 1e400')).toMatchObject({ code: 'syntax', column: 6, message: expect.stringMatching(/too large/) as unknown });
    expect(refusal('a == -1e400')).toMatchObject({ code: 'syntax', column: 6 });
    expect(refusal(`a > ${ABSURD}`)).toMatchObject({ code: 'syntax', column: 5, message: expect.stringMatching(/exponent .*too long/) as unknown });
    expect(refusal(`a in [1, ${ABSURD}]`)).toMatchObject({ code: 'syntax', column: 10 });
    // A zero is zero whatever its exponent.
    expect(ev('a == 0e99999999999999999999', { a: 0 })).toBe(true);
  });
});

describe('plain objects without lexemes (policy test files) compare their doubles as before', () => {
  // A YAML or TOML case file gives JS numbers: the double is the value, and String() writes it exactly.
  const table: [source: string, args: JsonObject, want: Truth][] = [
    ['amount > 100', { amount: 150 }, true],
    ['amount > 100', { amount: 100 }, false],
    ['amount >= 100.5', { amount: 100.5 }, true],
    ['n == 100', { n: 1e2 }, true],
    ['n == 0', { n: -0 }, true],
    ['n < 0', { n: -0 }, false],
    ['x in [1, 2]', { x: 2 }, true],
    ['x in [1, "2"]', { x: 2 }, U],
    ['l == 0.3', { l: 0.1 + 0.2 }, false],
    ['l == 0.30000000000000004', { l: 0.1 + 0.2 }, true],
    ['n > 1e21', { n: 1e22 }, true], // String(1e22) is "1e+22"
    ['n < 1e-7', { n: 1e-8 }, true], // String(1e-8) is "1e-8"
    ['n == 5e-324', { n: Number.MIN_VALUE }, true],
    ['n == 1.7976931348623157e308', { n: Number.MAX_VALUE }, true],
    // The double these integers become is compared as the double it is (its shortest text).
    ['wei > 1000000000000000000', { wei: 1000000000000000064 }, false], // the double is exactly 1e18
    ['channel_id in [1234567890123456800]', { channel_id: 1234567890123456800 }, true],
    ['n == 9007199254740992', { n: 9007199254740992 }, true],
  ];
  it.each(table)('%s with %j is %s', (source, args, want) => {
    expect(ev(source, args)).toBe(want);
  });
});

describe('property: exact comparison agrees with double comparison wherever doubles are exact', () => {
  const OPS = ['==', '!=', '<', '<=', '>', '>='] as const;
  const doubleCompare = (a: number, op: (typeof OPS)[number], b: number): boolean => {
    switch (op) {
      case '==':
        return a === b;
      case '!=':
        return a !== b;
      case '<':
        return a < b;
      case '<=':
        return a <= b;
      case '>':
        return a > b;
      case '>=':
        return a >= b;
    }
  };
  // Every finite double, -0 and subnormals included, with some small integers and equal pairs.
  const double = fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer({ min: -3, max: 3 }),
    fc.constantFrom(-0, 0, 0.1, 0.2, 0.3, 2 ** 53, 2 ** 53 + 2, Number.MIN_VALUE, -Number.MAX_VALUE),
  );
  const pair = fc.oneof(fc.tuple(double, double), double.map((a) => [a, a] as [number, number]));

  // String(n), or the same value spelled otherwise ("5" as "5.0e0", "1.5e+21" as "1.50e+21"): the
  // parser then records the spelling as a lexeme, and the comparison goes through exact decimals
  // rather than the shortcut for numbers that are their doubles' own text.
  const spell = (n: number, respell: boolean): string => {
    const text = String(n);
    if (!respell) return text;
    const [mantissa = '', exponent = '0'] = text.split('e');
    return `${mantissa}${mantissa.includes('.') ? '0' : '.0'}e${exponent}`;
  };

  it('path against path, parsed (lexemes) and plain', () => {
    fc.assert(
      fc.property(pair, fc.constantFrom(...OPS), fc.boolean(), fc.boolean(), ([a, b], op, ra, rb) => {
        const c = compileCondition(`a ${op} b`);
        const want = doubleCompare(a, op, b);
        expect(c.evaluate({ a, b })).toBe(want);
        expect(c.evaluate(body(`{"a":${spell(a, ra)},"b":${spell(b, rb)}}`))).toBe(want);
      }),
      { numRuns: 3000 },
    );
  });

  it('path against a literal, and `in`', () => {
    fc.assert(
      fc.property(pair, fc.constantFrom(...OPS), fc.boolean(), fc.boolean(), ([a, b], op, ra, rb) => {
        const args = body(`{"a":${spell(a, ra)},"list":[${spell(b, ra)}]}`);
        expect(ev(`a ${op} ${spell(b, rb)}`, args)).toBe(doubleCompare(a, op, b));
        expect(ev(`a ${op} ${spell(b, rb)}`, { a })).toBe(doubleCompare(a, op, b));
        expect(ev(`a in [${spell(b, rb)}]`, args)).toBe(a === b);
        expect(ev(`${spell(b, rb)} in list`, { a, list: [a] })).toBe(a === b);
        expect(ev('a in list', args)).toBe(a === b);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('property: parsed numbers compare as their exact decimal values', () => {
  // mantissa × 10^exponent, written as JSON in several ways, against a BigInt reference.
  const num = fc.record({ m: fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }), e: fc.integer({ min: -30, max: 30 }) });
  const spell = (n: { m: bigint; e: number }, style: number): string => {
    if (style === 0 || n.e === 0) return `${n.m}e${n.e}`;
    if (n.m === 0n) return '0.0'; // not 000: JSON and conditions refuse leading zeros
    if (n.e > 0) return `${n.m}${'0'.repeat(n.e)}`; // an integer, as ids and amounts are written
    const digits = (n.m < 0n ? -n.m : n.m).toString().padStart(-n.e + 1, '0');
    return `${n.m < 0n ? '-' : ''}${digits.slice(0, n.e)}.${digits.slice(n.e)}`;
  };
  const reference = (x: { m: bigint; e: number }, y: { m: bigint; e: number }): number => {
    const low = Math.min(x.e, y.e);
    const a = x.m * 10n ** BigInt(x.e - low);
    const b = y.m * 10n ** BigInt(y.e - low);
    return a < b ? -1 : a > b ? 1 : 0;
  };
  // Near neighbours are where doubles fail: b is often a plus or minus one unit in the last place.
  const pairArb = fc.oneof(
    fc.tuple(num, num),
    fc.tuple(num, fc.integer({ min: -2, max: 2 })).map(([x, d]) => [x, { m: x.m + BigInt(d), e: x.e }] as const),
  );

  it('argument against literal, and argument against argument', () => {
    fc.assert(
      fc.property(pairArb, fc.integer({ min: 0, max: 1 }), fc.integer({ min: 0, max: 1 }), ([x, y], sx, sy) => {
        const args = body(`{"a":${spell(x, sx)},"b":${spell(y, sy)},"list":[${spell(y, 1 - sy)}]}`);
        const want = reference(x, y);
        expect(ev(`a < ${spell(y, sy)}`, args)).toBe(want < 0);
        expect(ev(`a == ${spell(y, 1 - sy)}`, args)).toBe(want === 0);
        expect(ev('a >= b', args)).toBe(want >= 0);
        expect(ev(`a in [${spell(y, sy)}]`, args)).toBe(want === 0);
        expect(ev('a in list', args)).toBe(want === 0);
      }),
      { numRuns: 2000 },
    );
  });
});
