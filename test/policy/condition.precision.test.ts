// Numbers in conditions compare both as doubles and exactly, as written. A tool that reads JSON numbers as doubles (any JavaScript tool) acts on the double, so an
// exact-only comparison failed open: `to in [9007199254740992]` did not match 9007199254740993, which
// the tool then read as 9007199254740992. Different doubles order their exact values the same way
// (rounding is monotonic), so the two readings agree; where the doubles are equal but the values as
// written differ, they disagree and the comparison is undecidable (docs/spec.md section 3: fail closed both
// ways). Request arguments come through the strict JSON parser, which keeps each number's lexeme
// beside its double; these tests go through parseJson so the lexeme path is the one exercised. Policy
// test files (YAML/TOML) give plain objects without lexemes, whose doubles String() writes exactly.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../src/json/parse.js';
import type { JsonObject } from '../../src/json/value.js';
import { on } from '../helpers/condition.js';
import { compileCondition, ConditionError, type Truth } from '../../src/policy/condition/compile.js';
import { runs } from '../helpers/runs.js';

const U = 'undecidable';

/** Arguments as the service gets them: parsed from the request body, lexemes kept. */
function body(json: string): JsonObject {
  return parseJson(json) as JsonObject;
}

function ev(source: string, args: JsonObject): Truth {
  const c = compileCondition(source);
  const t = c.evaluate(on(args));
  expect(c.explain(on(args)).truth, `explain of ${source}`).toBe(t); // the two must never disagree
  return t;
}

// An exponent of more digits than json/decimal.ts compares: the parser accepts it (the double is 0).
const ABSURD = '1e-99999999999999999999';

describe('the cases that once failed open, through parseJson', () => {
  const table: [source: string, json: string, want: Truth][] = [
    // An allow-list of 64-bit ids. A neighbour within the double's spacing (256 here) is the same
    // double as the listed id: a tool reading doubles acts on the listed id, exactly it is another one.
    ['channel_id in [1234567890123456789]', '{"channel_id":1234567890123456800}', U],
    ['channel_id in [1234567890123456789]', '{"channel_id":1234567890123456700}', U],
    ['channel_id in [1234567890123456789]', '{"channel_id":1234567890123456789}', true],
    ['channel_id in [1, 1234567890123456789]', '{"channel_id":1234567890123456788}', U],
    ['channel_id == 1234567890123456789', '{"channel_id":1234567890123456800}', U],
    ['channel_id != 1234567890123456789', '{"channel_id":1234567890123456800}', U],
    // The next double up is another id in both readings.
    ['channel_id in [1234567890123456789]', '{"channel_id":1234567890123457024}', false],
    ['channel_id != 1234567890123456789', '{"channel_id":1234567890123457024}', true],
    // A confirm threshold: 1 ETH + 64 wei is over 1 ETH as written, but the same double as 1 ETH.
    ['wei > 1000000000000000000', '{"wei":1000000000000000064}', U],
    ['wei > 1000000000000000000', '{"wei":1000000000000000000}', false],
    ['wei > 1000000000000000000', '{"wei":1000000000000000128}', true], // the next double up
    ['wei > 1e18', '{"wei":1000000000000000001}', U],
    ['wei >= 1000000000000000001', '{"wei":1000000000000000000}', U],
    ['n > 9007199254740992', '{"n":9007199254740993}', U], // 2^53 + 1 is the double 2^53
    ['n <= 9007199254740992', '{"n":9007199254740993}', U],
    ['n == 9007199254740993', '{"n":9007199254740992}', U],
    ['n > 9007199254740992', '{"n":9007199254740994}', true],
    ['n == 9007199254740993', '{"n":9007199254740994}', false],
    // The same value written differently is equal.
    ['n == 100', '{"n":1e2}', true],
    ['n == 100', '{"n":100.0}', true],
    ['n == 1e2', '{"n":100}', true],
    ['n == 100.000', '{"n":1E+2}', true],
    ['n in [5, 100]', '{"n":0.1e3}', true],
    ['n == 0', '{"n":-0}', true],
    ['n == -0', '{"n":0.0}', true],
    ['n < 0', '{"n":-0}', false],
    // Below the smallest double: 2e-324 is the double 0 but is not 0 as written.
    ['n > 0', '{"n":2e-324}', U],
    ['n == 0', '{"n":2e-324}', U],
    ['n < 1e-323', '{"n":2e-324}', true], // 1e-323 is a double above 0
    ['n > 2e-324', '{"n":0}', U],
    ['n > 0', '{"n":5e-324}', true], // the smallest double is not 0
    // Fractions that doubles cannot hold: 0.10000000000000000001 is the double 0.1.
    ['n > 0.1', '{"n":0.10000000000000000001}', U],
    ['n == 0.3', '{"n":0.30000000000000000000}', true],
  ];
  it.each(table)('%s with %s is %s', (source, json, want) => {
    expect(ev(source, body(json))).toBe(want);
  });

  it('reads lexemes at any depth and inside arrays', () => {
    const args = body('{"order":{"items":[{"id":1234567890123456800}]},"ids":[7,1234567890123456800,-0]}');
    expect(ev('order.items.0.id == 1234567890123456789', args)).toBe(U); // same double, not as written
    expect(ev('order.items.0.id == 1234567890123456800', args)).toBe(true);
    expect(ev('ids.1 > 1234567890123456799', args)).toBe(U); // same double, not as written
    expect(ev('ids.1 > 1234567890123456000', args)).toBe(true);
    expect(ev('1234567890123456789 in ids', args)).toBe(U);
    expect(ev('1234567890123456800 in ids', args)).toBe(true);
    expect(ev('1234567890123457024 in ids', args)).toBe(false);
    expect(ev('0 in ids', args)).toBe(true);
    expect(ev('ids.0 in ids', args)).toBe(true);
  });

  it('compares two argument numbers as doubles and as written', () => {
    expect(ev('a < b', body('{"a":9007199254740992,"b":9007199254740993}'))).toBe(U);
    expect(ev('a == b', body('{"a":9007199254740992,"b":9007199254740993}'))).toBe(U);
    expect(ev('a < b', body('{"a":9007199254740992,"b":9007199254740994}'))).toBe(true);
    expect(ev('a == b', body('{"a":1e2,"b":100.0}'))).toBe(true);
  });
});

describe('where a tool reading doubles and the exact value disagree: undecidable, fail closed', () => {
  // A rule does with this what it does with a missing value (docs/spec.md section 3): a `when` makes a
  // restricting rule (allow: false, abort, confirm) apply and an allowing rule (allow: true) not
  // apply, and a `confirm` asks. test/cases/big-numbers has such rules end to end.
  it('a deny-list is not dodged by a number that is the listed one as a double', () => {
    // `allow: false, when: "to in [9007199254740992]"`: the tool acts on 9007199254740992.
    const args = body('{"to":9007199254740993}');
    expect(ev('to in [9007199254740992]', args)).toBe(U);
    expect(ev('to == 9007199254740992', args)).toBe(U);
    // Negated (an allow-list written as `not`), it is undecidable too: never a quiet true.
    expect(ev('not (to in [9007199254740992])', args)).toBe(U);
    expect(ev('to in [1, 9007199254740992]', args)).toBe(U);
    expect(ev('to in [9007199254740992]', body('{"to":9007199254740992}'))).toBe(true);
    expect(ev('to in [9007199254740992]', body('{"to":9007199254740994}'))).toBe(false);
  });

  it('a threshold is not dodged by a number just under it as written', () => {
    // `confirm: "amount >= 1e18"`: 999999999999999999.99 is the double 1e18.
    const args = body('{"amount":999999999999999999.99}');
    expect(ev('amount >= 1e18', args)).toBe(U);
    expect(ev('amount < 1e18', args)).toBe(U);
    expect(ev('amount >= 1e18', body('{"amount":1e18}'))).toBe(true);
    expect(ev('amount >= 1e18', body('{"amount":999999999999999872}'))).toBe(false); // the next double down
  });

  it('decides around it in and/or as undecidable does', () => {
    const args = body('{"to":9007199254740993,"n":1}');
    expect(ev('to in [9007199254740992] or n == 1', args)).toBe(true);
    expect(ev('to in [9007199254740992] and n == 2', args)).toBe(false);
    expect(ev('to in [9007199254740992] and n == 1', args)).toBe(U);
  });

  it('explain says the two readings disagree, without quoting the number', () => {
    const why = (source: string, json: string): string => compileCondition(source).explain(on(body(json))).why;
    const disagree = 'but a different number as written; the two readings disagree';
    expect(why('to in [9007199254740992]', '{"to":9007199254740993}')).toBe(
      `undecidable: \`to\` is the same double as a number in the list ${disagree}`,
    );
    expect(why('amount >= 1e18', '{"amount":999999999999999999.99}')).toBe(
      `undecidable: \`amount\` is the same double as the literal ${disagree}`,
    );
    expect(why('1e18 <= amount', '{"amount":999999999999999999.99}')).toBe(
      `undecidable: \`amount\` is the same double as the literal ${disagree}`,
    );
    expect(why('a < b', '{"a":9007199254740992,"b":9007199254740993}')).toBe(
      `undecidable: \`a\` is the same double as \`b\` ${disagree}`,
    );
    expect(why('x in ids', '{"x":9007199254740992,"ids":["a",9007199254740993]}')).toBe(
      'undecidable: `x` is a number, and `ids` holds a string', // the first element that could not be compared
    );
    expect(why('x in ids', '{"x":9007199254740992,"ids":[1,9007199254740993,"a"]}')).toBe(
      `undecidable: \`x\` is the same double as a number in \`ids\` ${disagree}`,
    );
    expect(why('9007199254740992 in ids', '{"ids":[9007199254740993]}')).toBe(
      `undecidable: \`ids\` holds the same double as the literal ${disagree}`,
    );
    for (const [source, json] of [
      ['to in [9007199254740992]', '{"to":9007199254740993}'],
      ['amount >= 1e18', '{"amount":999999999999999999.99}'],
      ['a < b', '{"a":9007199254740992,"b":9007199254740993}'],
    ] as const) {
      expect(why(source, json)).not.toContain('9007199254740993');
      expect(why(source, json)).not.toContain('999999999999999999');
    }
  });
});

describe('a number without an exact value is undecidable against its own double', () => {
  // ABSURD is the double 0, and its exact value cannot be computed.
  const args = body(`{"n":${ABSURD},"ns":[${ABSURD}],"mixed":[${ABSURD},5],"zero":0e99999999999999999999}`);

  it('where the doubles are equal, in every comparison, as a comparison across types is', () => {
    for (const source of [
      'n > 0',
      'n < 0',
      'n == 0',
      'n != 0',
      'n in [0, 1]',
      'n in ["a"]',
      'n in ns',
      '0 in ns',
      '0 in mixed',
      'n == zero',
      'zero == n',
    ]) {
      expect(ev(source, args), source).toBe(U);
    }
  });

  it('where the doubles differ, the two readings agree and it compares', () => {
    expect(ev('n < 1', args)).toBe(true);
    expect(ev('n > -1', args)).toBe(true);
    expect(ev('n == 1', args)).toBe(false);
    expect(ev('n in [1, 2]', args)).toBe(false);
    expect(ev('6 in mixed', args)).toBe(false);
  });

  it('but it is still a number: present, not null, and a match elsewhere in a list wins', () => {
    expect(ev('n == null', args)).toBe(false);
    expect(ev('n != null', args)).toBe(true);
    expect(ev('n in []', args)).toBe(false);
    expect(ev('5 in mixed', args)).toBe(true);
    expect(ev('null in ns', args)).toBe(false);
    // A zero's exponent does not matter.
    expect(ev('zero == 0', args)).toBe(true);
  });

  it('explain says why without quoting the number', () => {
    const why = (source: string): string => compileCondition(source).explain(on(args)).why;
    expect(why('n > 0')).toBe('undecidable: `n` is a number with an exponent too long to compare');
    expect(why('0 < n')).toBe('undecidable: `n` is a number with an exponent too long to compare');
    expect(why('n in [0, 1]')).toBe('undecidable: `n` is a number with an exponent too long to compare');
    expect(why('0 in mixed')).toBe('undecidable: `mixed` holds a number with an exponent too long to compare');
    // Not the number but the string is what could not be compared here.
    expect(why('n in [1, "a"]')).toBe('undecidable: `n` is a number, and the list holds a string');
    for (const source of ['n > 0', 'n in ns', '0 in ns', '0 in mixed']) expect(why(source)).not.toContain('999');
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
    for (const source of [
      'a == 1234567890123456789',
      'a > 2e-324',
      'a in [0.1, 9007199254740993]',
      'a < 1.00000000000000000001',
    ]) {
      expect(() => compileCondition(source), source).not.toThrow();
    }
    // The exact value tells a plain 1 from the literal, whose double is 1: the readings disagree.
    expect(ev('a < 1.00000000000000000001', { a: 1 })).toBe(U);
    expect(ev('a < 1.00000000000000000001', { a: 0.5 })).toBe(true);
    expect(ev('a > 2e-324', { a: 0 })).toBe(U); // the literal's double is 0
    expect(ev('a > 2e-324', { a: 5e-324 })).toBe(true);
    expect(ev('a in [0.1, 9007199254740993]', { a: 9007199254740992 })).toBe(U);
    expect(ev('a in [0.1, 9007199254740993]', { a: 0.1 })).toBe(true);
  });

  it('are printed in explanations as written, not as their nearest double', () => {
    const c = compileCondition('channel_id in [1234567890123456789, 1e2]');
    expect(c.explain(on(body('{"channel_id":1234567890123457024}'))).why).toBe(
      'channel_id in [1234567890123456789, 1e2] is false',
    );
    expect(c.explain(on(body('{"channel_id":1234567890123456789}'))).why).toBe(
      'channel_id in [1234567890123456789, 1e2] is true',
    );
    expect(compileCondition('wei > 1.0e18').explain(on(body('{"wei":1000000000000000128}'))).why).toBe(
      'wei > 1.0e18 is true',
    );
  });

  it("are still refused out of a double's range, and refused with an exponent too long to compare", () => {
    const refusal = (source: string): ConditionError => {
      try {
        compileCondition(source);
      } catch (err) {
        if (err instanceof ConditionError) return err;
        throw err;
      }
      throw new Error(`expected ${source} to be refused`);
    };
    expect(refusal('a == 1e400')).toMatchObject({
      code: 'syntax',
      column: 6,
      message: expect.stringMatching(/too large/) as unknown,
    });
    expect(refusal('a == -1e400')).toMatchObject({ code: 'syntax', column: 6 });
    expect(refusal(`a > ${ABSURD}`)).toMatchObject({
      code: 'syntax',
      column: 5,
      message: expect.stringMatching(/exponent .*too long/) as unknown,
    });
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

describe("property: a number written as its double's own value compares as that double, however spelled", () => {
  // Every number here is exactly a double: where the doubles are equal the values as written are too,
  // so the answer is the double comparison throughout (never undecidable).
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
  const pair = fc.oneof(
    fc.tuple(double, double),
    double.map((a) => [a, a] as [number, number]),
  );

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
        expect(c.evaluate(on({ a, b }))).toBe(want);
        expect(c.evaluate(on(body(`{"a":${spell(a, ra)},"b":${spell(b, rb)}}`)))).toBe(want);
      }),
      { numRuns: runs(3000) },
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
      { numRuns: runs(3000) },
    );
  });
});

describe('property: parsed numbers compare as doubles and as written; where the two disagree, undecidable', () => {
  // mantissa × 10^exponent, written as JSON in several ways, against a BigInt reference. (1) Where the
  // doubles differ, the answer is the double comparison, which the exact values order the same way
  // (rounding is monotonic). (2) Where the doubles are equal and the values as written differ, it is
  // undecidable; where both are equal, == holds.
  const num = fc.record({
    m: fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }),
    e: fc.integer({ min: -30, max: 30 }),
  });
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
  // Near neighbours are where doubles fail: b is often a plus or minus one unit in the last place,
  // which with up to 26 significant digits is mostly the same double.
  const pairArb = fc.oneof(
    fc.tuple(num, num),
    fc.tuple(num, fc.integer({ min: -2, max: 2 })).map(([x, d]) => [x, { m: x.m + BigInt(d), e: x.e }] as const),
  );

  it('argument against literal, and argument against argument', () => {
    const seen = { differ: 0, disagree: 0, equal: 0 };
    fc.assert(
      fc.property(pairArb, fc.integer({ min: 0, max: 1 }), fc.integer({ min: 0, max: 1 }), ([x, y], sx, sy) => {
        const args = body(`{"a":${spell(x, sx)},"b":${spell(y, sy)},"list":[${spell(y, 1 - sy)}]}`);
        // The doubles the parser read, as a tool reading doubles would.
        const da = args['a'] as number;
        const db = args['b'] as number;
        const exact = reference(x, y);
        let want: { lt: Truth; eq: Truth; ge: Truth };
        if (da !== db) {
          seen.differ++;
          expect(Math.sign(da - db), 'rounding is monotonic').toBe(exact);
          want = { lt: da < db, eq: false, ge: da >= db };
        } else if (exact !== 0) {
          seen.disagree++;
          want = { lt: U, eq: U, ge: U };
        } else {
          seen.equal++;
          want = { lt: false, eq: true, ge: true };
        }
        expect(ev(`a < ${spell(y, sy)}`, args)).toBe(want.lt);
        expect(ev(`a == ${spell(y, 1 - sy)}`, args)).toBe(want.eq);
        expect(ev('a >= b', args)).toBe(want.ge);
        expect(ev(`a in [${spell(y, sy)}]`, args)).toBe(want.eq);
        expect(ev('a in list', args)).toBe(want.eq);
      }),
      { numRuns: runs(2000) },
    );
    // All three cases came up (each has a large share of the runs).
    expect(seen.differ).toBeGreaterThan(0);
    expect(seen.disagree).toBeGreaterThan(0);
    expect(seen.equal).toBeGreaterThan(0);
  });
});
