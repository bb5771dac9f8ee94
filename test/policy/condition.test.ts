import { describe, it, expect } from 'vitest';
import type { JsonObject, JsonValue } from '../../src/json/value.js';
import { compileError, on } from '../helpers/condition.js';
import { compileCondition, ConditionError, type Truth } from '../../src/policy/condition/compile.js';

const U = 'undecidable';

function ev(source: string, args: JsonObject): Truth {
  return compileCondition(source).evaluate(on(args));
}

describe('compile errors', () => {
  const cases: [source: string, code: ConditionError['code'], column: number, message: RegExp][] = [
    // lexical
    ["note == 'abc", 'syntax', 9, /unterminated string/],
    ['note == "abc\\', 'syntax', 9, /unterminated string/],
    ['a == "\\q"', 'syntax', 7, /unknown escape/],
    ['a == "\\u12G4"', 'syntax', 7, /four hex digits/],
    ['a == "x\ny"', 'syntax', 8, /control character/],
    ['amount +1', 'syntax', 8, /'\+'.*no arithmetic/],
    ['-a', 'syntax', 1, /unexpected '-'/],
    ['a = 1', 'syntax', 3, /'=='/],
    ['a && b', 'syntax', 3, /use `and`/],
    ['a || b', 'syntax', 3, /use `or`/],
    ['!a', 'syntax', 1, /use `not`/],
    ['a == 01', 'syntax', 6, /leading zeros/],
    ['a == 1.', 'syntax', 8, /digits after '.'/],
    ['a == 1e', 'syntax', 8, /exponent/],
    ['a == 1e999', 'syntax', 6, /too large/],
    ['a == 12abc', 'syntax', 8, /followed by/],
    ['a == .5', 'syntax', 6, /unexpected '.'/],
    ['a. == 1', 'syntax', 3, /after '.'/],
    ['a.b-c == 1', 'syntax', 4, /unexpected '-'/],
    ['items.01 == 1', 'syntax', 7, /leading zeros/],
    ['items.0x == 1', 'syntax', 7, /name or an array index/],
    ['items.1234567890 == 1', 'syntax', 7, /at most 9 digits/],
    ['a == @', 'syntax', 6, /unexpected '@'/],
    ['a == \u00e9', 'syntax', 6, /U\+00E9/],
    // grammar
    ['amount >> 1', 'syntax', 9, /expected a value after '>', found '>'/],
    ['a ==', 'syntax', 5, /expected a value after '==', found the end/],
    ['', 'syntax', 1, /expected a value, found the end/],
    ['   ', 'syntax', 4, /expected a value/],
    ['(a == 1', 'syntax', 8, /expected '\)' to close the '\(' at column 1/],
    ['((a == 1)', 'syntax', 10, /close the '\(' at column 1/],
    ['a == 1)', 'syntax', 7, /without a matching '\('/],
    ['()', 'syntax', 2, /expected a value/],
    ['f(x)', 'type', 1, /`f` cannot be called; the built-ins are/],
    ['a.b()', 'syntax', 4, /`a.b` cannot be called/],
    ['a.b ()', 'syntax', 5, /cannot be called/],
    ['a[0] == 1', 'syntax', 2, /write `a.0`/],
    ['a == b == c', 'syntax', 8, /cannot be chained/],
    ['a < b in c', 'syntax', 7, /cannot be chained/],
    ['a b', 'syntax', 3, /unexpected `b`/],
    ['amount 100', 'syntax', 8, /unexpected `100`/],
    ['amount -1', 'syntax', 8, /unexpected `-1`/],
    // a long token is named by its first 32 characters only (a pasted secret is not printed back)
    [`a ${'k'.repeat(3000)}`, 'syntax', 3, new RegExp(`^unexpected \`${'k'.repeat(32)}…\`;`)],
    [`a 1.${'0'.repeat(3000)}`, 'syntax', 3, new RegExp(`^unexpected \`1\\.${'0'.repeat(30)}…\`;`)],
    ['a and', 'syntax', 6, /expected a value/],
    ['and a', 'syntax', 1, /found `and`/],
    ['a == not b', 'syntax', 6, /found `not`/],
    ['a in [b]', 'syntax', 7, /a list holds only/],
    ['a in [1,]', 'syntax', 9, /a list holds only/],
    ['a in [1 2]', 'syntax', 9, /expected ',' or '\]' in the list opened at column 6/],
    ['a in [1', 'syntax', 8, /expected ',' or '\]'/],
    ['a in [[1]]', 'syntax', 7, /a list holds only/],
    // keywords cannot be read as paths
    ['true.x == 1', 'syntax', 1, /keyword `true` cannot start a path/],
    ['null.x == 1', 'syntax', 1, /keyword `null`/],
    ['in == 1', 'syntax', 1, /found `in`/],
    ['x == or', 'syntax', 6, /found `or`/],
    // types
    ['100', 'type', 1, /a number literal is not a condition/],
    ['"yes"', 'type', 1, /a string literal is not a condition/],
    ['null', 'type', 1, /null is not a condition/],
    ['a and 1', 'type', 7, /number literal is not a condition/],
    ['not "x"', 'type', 5, /string literal is not a condition/],
    ['[1, 2]', 'type', 1, /right of `in`/],
    ['[1, 2] == a', 'type', 1, /right of `in`/],
    ['a == [1]', 'type', 6, /right of `in`/],
    ['not [1]', 'type', 5, /right of `in`/],
    ['1 == 1', 'type', 3, /compares two constants/],
    ['"a" < "b"', 'type', 5, /compares two constants/],
    ['null == null', 'type', 6, /compares two constants/],
    ['true != false', 'type', 6, /compares two constants/],
    ['1 in [1, 2]', 'type', 3, /compares two constants/],
    ['a in 1', 'type', 6, /right side of `in`/],
    ['a in "FR"', 'type', 6, /right side of `in`/],
    ['a < true', 'type', 5, /orders numbers or strings, not `true`/],
    ['null >= a', 'type', 1, /orders numbers or strings, not null/],
    ['(a == 1) == true', 'type', 2, /operands of '==' are paths, calls or literals/],
    ['(a or b) in [1]', 'type', 2, /operands of `in`/],
    ['a in (b == 1)', 'type', 7, /right side of `in`/],
    // bounds
    ['a'.repeat(4097), 'too_long', 4097, /at most 4096 characters/],
    [
      'a in [' + Array.from({ length: 1025 }, () => '1').join(',') + ']',
      'too_long',
      6 + 1024 * 2 + 1,
      /at most 1024 items/,
    ],
    ['('.repeat(65) + 'a' + ')'.repeat(65), 'too_deep', 65, /at most 64 deep/],
    ['not '.repeat(65) + 'a', 'too_deep', 257, /at most 64 deep/],
    ['(not '.repeat(33) + 'a' + ')'.repeat(33), 'too_deep', 32 * 5 + 1, /at most 64 deep/],
  ];
  it.each(cases)('%j → %s at column %i', (source, code, column, message) => {
    const err = compileError(source);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('ConditionError');
    expect(err.code).toBe(code);
    expect(err.column).toBe(column);
    expect(err.message).toMatch(message);
    expect(err.message).toContain(`column ${column}`);
  });

  it('treats parentheses as grouping only: (b) is the path b', () => {
    expect(ev('a in (b)', { a: 1, b: [1] })).toBe(true);
    expect(ev('(amount) > 100', { amount: 101 })).toBe(true);
  });

  it('accepts the bounds exactly', () => {
    const long = 'a == 1 and ' + 'b'.repeat(4096 - 'a == 1 and '.length);
    expect(long.length).toBe(4096);
    expect(() => compileCondition(long)).not.toThrow();
    expect(ev('('.repeat(64) + 'a' + ')'.repeat(64), { a: true })).toBe(true);
    expect(ev('not '.repeat(64) + 'a', { a: true })).toBe(true);
    const list = 'a in [' + Array.from({ length: 1024 }, (_, i) => String(i)).join(',') + ']';
    expect(ev(list, { a: 1023 })).toBe(true);
  });

  it('does not echo string literal content in syntax errors', () => {
    const err = compileError('a "hunter2"');
    expect(err.message).toContain('a string');
    expect(err.message).not.toContain('hunter2');
  });
});

describe('secret-like paths are refused', () => {
  const refused: [source: string, column: number][] = [
    ['password == "x"', 1],
    ['secret', 1],
    ['token != null', 1],
    ['api_key == "x"', 1],
    ['apikey == "x"', 1],
    ['API_KEY == "x"', 1],
    ['ApiKey == "x"', 1],
    ['private_key == "x"', 1],
    ['privateKey == "x"', 1],
    ['credential == "x"', 1],
    ['credentials == "x"', 1],
    ['client_secret == "x"', 1],
    ['accessToken == "x"', 1],
    ['refresh_token == "x"', 1],
    ['user_password_hash == "x"', 1],
    ['headers.Authorization_Token == "x"', 1],
    ['x == 1 and creds.apiKey', 12],
    ['items.0.PASSWORD == "x"', 1],
    ['a in config.secrets', 6],
  ];
  it.each(refused)('%j', (source, column) => {
    const err = compileError(source);
    expect(err.code).toBe('secret_path');
    expect(err.column).toBe(column);
    expect(err.message).toMatch(/looks like a secret/);
  });

  it('refuses at compile even when the comparison would be fine', () => {
    expect(() => compileCondition('api_key == null')).toThrow(ConditionError);
  });

  it('allows ordinary names', () => {
    for (const s of ['amount > 1', 'name == "x"', 'order.total >= 1', 'author == "x"', 'key == "x"']) {
      expect(() => compileCondition(s)).not.toThrow();
    }
  });
});

describe('precedence: or < and < not < comparison', () => {
  it('a or b and c is a or (b and c)', () => {
    expect(ev('a or b and c', { a: true, b: false, c: false })).toBe(true);
    expect(ev('(a or b) and c', { a: true, b: false, c: false })).toBe(false);
  });
  it('a and b or c is (a and b) or c', () => {
    expect(ev('a and b or c', { a: false, b: true, c: true })).toBe(true);
    expect(ev('a and (b or c)', { a: false, b: true, c: true })).toBe(false);
  });
  it('not a == 1 is not (a == 1)', () => {
    expect(ev('not a == 1', { a: 2 })).toBe(true);
    expect(ev('not a == 1', { a: 1 })).toBe(false);
  });
  it('not a and b is (not a) and b', () => {
    expect(ev('not a and b', { a: false, b: false })).toBe(false);
    expect(ev('not (a and b)', { a: false, b: false })).toBe(true);
  });
  it('not not a is a', () => {
    expect(ev('not not a', { a: true })).toBe(true);
  });
  it('x in [..] binds tighter than and/not', () => {
    expect(ev('not x in [1, 2] and y', { x: 3, y: true })).toBe(true);
  });
  it('whitespace and newlines are insignificant', () => {
    expect(ev('\n  amount\t>\r\n100  ', { amount: 101 })).toBe(true);
    expect(ev('amount>100', { amount: 101 })).toBe(true);
  });
  it('keywords are lowercase exactly: True and AND are names', () => {
    expect(ev('True', { True: true })).toBe(true);
    expect(ev('AND == 1', { AND: 1 })).toBe(true);
  });
});

describe('the examples of docs/spec.md', () => {
  it('amount > 100', () => {
    const c = compileCondition('amount > 100');
    expect(c.evaluate(on({ amount: 150 }))).toBe(true);
    expect(c.evaluate(on({ amount: 100 }))).toBe(false);
    expect(c.evaluate(on({ amount: '150' }))).toBe(U);
    expect(c.evaluate(on({}))).toBe(U);
    expect(c.explain(on({ amount: 150 }))).toEqual({ truth: true, why: 'amount > 100 is true' });
    expect(c.explain(on({}))).toEqual({ truth: U, why: 'undecidable: `amount` is missing' });
    expect(c.explain(on({ amount: 'lots' }))).toEqual({
      truth: U,
      why: 'undecidable: `amount` is a string, compared with a number',
    });
  });
  it('country in ["FR", "DE"]', () => {
    const c = compileCondition('country in ["FR", "DE"]');
    expect(c.evaluate(on({ country: 'FR' }))).toBe(true);
    expect(c.evaluate(on({ country: 'US' }))).toBe(false);
    expect(c.evaluate(on({ country: 33 }))).toBe(U);
    expect(c.evaluate(on({}))).toBe(U);
    expect(c.explain(on({ country: 'US' })).why).toBe("country in ['FR', 'DE'] is false");
  });
  it('order.total >= 50 and not express', () => {
    const c = compileCondition('order.total >= 50 and not express');
    expect(c.paths).toEqual(['order.total', 'express']);
    expect(c.evaluate(on({ order: { total: 50 }, express: false }))).toBe(true);
    expect(c.evaluate(on({ order: { total: 50 }, express: true }))).toBe(false);
    expect(c.evaluate(on({ order: { total: 49 } }))).toBe(false); // false and undecidable = false
    expect(c.evaluate(on({ order: { total: 50 } }))).toBe(U);
    expect(c.explain(on({ order: { total: 49 } })).why).toBe('order.total >= 50 is false');
    expect(c.explain(on({ order: { total: 50 } })).why).toBe('undecidable: `express` is missing');
    expect(c.explain(on({ order: { total: 50 }, express: 1 })).why).toBe(
      'undecidable: `express` is a number, not a boolean',
    );
    expect(c.explain(on({ order: { total: 60 }, express: false })).why).toBe(
      'order.total >= 50 is true; express is false',
    );
  });
  it('note == null', () => {
    const c = compileCondition('note == null');
    expect(c.evaluate(on({ note: null }))).toBe(true);
    expect(c.evaluate(on({ note: 'hi' }))).toBe(false);
    expect(c.evaluate(on({ note: 0 }))).toBe(false);
    expect(c.evaluate(on({ note: {} }))).toBe(false);
    expect(c.evaluate(on({ note: [] }))).toBe(false);
    expect(c.evaluate(on({}))).toBe(U);
    expect(compileCondition('null != note').evaluate(on({ note: 'hi' }))).toBe(true);
  });
});

describe('paths', () => {
  it('reads nested objects and array indexes', () => {
    const args = { items: [{ sku: 'A1' }, { sku: 'B2' }], o: { '0': 'zero' } };
    expect(ev('items.0.sku == "A1"', args)).toBe(true);
    expect(ev('items.1.sku == "B2"', args)).toBe(true);
    expect(ev('items.2.sku == "B2"', args)).toBe(U);
    expect(ev('items.x == 1', args)).toBe(U);
    expect(ev('o.0 == "zero"', args)).toBe(true); // an integer segment is also an object key
    expect(ev('items.0.sku.x == 1', args)).toBe(U); // through a string
  });
  it('lists the paths read, in order, without duplicates', () => {
    expect(compileCondition('b > 1 or a < 2 and b < 3 or x in c').paths).toEqual(['b', 'a', 'x', 'c']);
    expect(compileCondition('true').paths).toEqual([]);
  });
  it('keeps source and freezes the result', () => {
    const c = compileCondition('a == 1');
    expect(c.source).toBe('a == 1');
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.paths)).toBe(true);
  });
});

describe('literals', () => {
  it('numbers are JSON-like with an optional minus', () => {
    expect(ev('a == -2.5', { a: -2.5 })).toBe(true);
    expect(ev('a == 1e3', { a: 1000 })).toBe(true);
    expect(ev('a == 1E-3', { a: 0.001 })).toBe(true);
    expect(ev('a == 0', { a: -0 })).toBe(true);
    expect(ev('a < -0.5', { a: -1 })).toBe(true);
  });
  it('strings take single or double quotes and the listed escapes', () => {
    expect(ev(`a == 'it\\'s'`, { a: "it's" })).toBe(true);
    expect(ev(`a == "say \\"hi\\""`, { a: 'say "hi"' })).toBe(true);
    expect(ev(`a == "x\\\\y"`, { a: 'x\\y' })).toBe(true);
    expect(ev(`a == "\\n\\t\\r"`, { a: '\n\t\r' })).toBe(true);
    expect(ev(`a == "\\u00e9\\u20AC"`, { a: 'é€' })).toBe(true);
    expect(ev(`a == 'd"q'`, { a: 'd"q' })).toBe(true);
    expect(ev(`a == "é"`, { a: 'é' })).toBe(true);
  });
  it('true and false are conditions', () => {
    expect(ev('true', {})).toBe(true);
    expect(ev('false or a', { a: true })).toBe(true);
    expect(compileCondition('true').explain(on({})).why).toBe('the constant true');
  });
});

// Every operator over every pair of JSON types, from paths, against the rules of docs/spec.md section 3.
describe('operators over every type pair', () => {
  const samples: Record<string, JsonValue[]> = {
    number: [1, 2],
    string: ['a', 'b'],
    boolean: [true, false],
    null: [null],
    array: [[1]],
    object: [{ k: 1 }],
  };
  type Kind = keyof typeof samples | 'missing';
  const kinds: Kind[] = [...Object.keys(samples), 'missing'];
  const valuesOf = (k: Kind): (JsonValue | undefined)[] => (k === 'missing' ? [undefined] : (samples[k] ?? []));
  const scalar = (k: Kind) => k === 'number' || k === 'string' || k === 'boolean' || k === 'null';
  const args = (l: JsonValue | undefined, r: JsonValue | undefined): JsonObject => {
    const o: JsonObject = {};
    if (l !== undefined) o.l = l;
    if (r !== undefined) o.r = r;
    return o;
  };

  const rows: [string, Kind, Kind, string][] = [];
  for (const op of ['==', '!=', '<', '<=', '>', '>=']) {
    for (const lk of kinds) for (const rk of kinds) rows.push([op, lk, rk, '']);
  }
  it.each(rows)('l %s r with %s, %s', (op, lk, rk) => {
    for (const l of valuesOf(lk)) {
      for (const r of valuesOf(rk)) {
        const got = ev(`l ${op} r`, args(l, r));
        let want: Truth;
        if (op === '==' || op === '!=') {
          want = lk === rk && scalar(lk) ? (l === r) === (op === '==') : U;
        } else if (lk === rk && (lk === 'number' || lk === 'string')) {
          const a = l as number | string;
          const b = r as number | string;
          want = op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b;
        } else {
          want = U;
        }
        expect(got, `${JSON.stringify(l)} ${op} ${JSON.stringify(r)}`).toBe(want);
      }
    }
  });

  it('the null literal compares with any present value', () => {
    for (const k of kinds) {
      for (const v of valuesOf(k)) {
        const a = args(v, undefined);
        expect(ev('l == null', a)).toBe(k === 'missing' ? U : v === null);
        expect(ev('l != null', a)).toBe(k === 'missing' ? U : v !== null);
        expect(ev('null == l', a)).toBe(k === 'missing' ? U : v === null);
      }
    }
  });

  it('literals of other types are cross-type: undecidable, never false', () => {
    expect(ev('l == "1"', { l: 1 })).toBe(U);
    expect(ev('l != "1"', { l: 1 })).toBe(U);
    expect(ev('l == 1', { l: true })).toBe(U);
    expect(ev('l == true', { l: 1 })).toBe(U);
    expect(ev('l == "x"', { l: null })).toBe(U);
    expect(ev('l == 1', { l: [1] })).toBe(U);
    expect(ev('l > 1', { l: '2' })).toBe(U);
    expect(ev('l == true', { l: true })).toBe(true);
    expect(ev('l != false', { l: true })).toBe(true);
  });

  it('strings order by UTF-16 code units', () => {
    expect(ev('l < r', { l: 'B', r: 'a' })).toBe(true);
    expect(ev('l < r', { l: '\uffff', r: '\u{1F600}' })).toBe(false); // surrogate 0xD83D < 0xFFFF
    expect(ev('l < "b"', { l: 'abc' })).toBe(true);
  });

  it('numbers compare as doubles and as written; where the two disagree, undecidable (test/policy/condition.precision.test.ts has more)', () => {
    expect(ev('l == 0.3', { l: 0.1 + 0.2 })).toBe(false); // different doubles: both readings say false
    // The literal is the double 9007199254740992 but not that number as written: the readings disagree.
    expect(ev('l == 9007199254740993', { l: 9007199254740992 })).toBe(U);
    expect(ev('l < 9007199254740993', { l: 9007199254740992 })).toBe(U);
    expect(ev('l < 9007199254740994', { l: 9007199254740992 })).toBe(true);
    expect(ev('l == 9007199254740992', { l: 9007199254740992 })).toBe(true);
  });
});

describe('in', () => {
  const table: [source: string, args: JsonObject, want: Truth][] = [
    ['x in [1, 2]', { x: 2 }, true],
    ['x in [1, 2]', { x: 3 }, false],
    ['x in [1, "2"]', { x: 2 }, U], // "2" could not be compared with a number
    ['x in [1, "2"]', { x: 1 }, true], // a match wins
    ['x in [1, null]', { x: 3 }, false], // null compares with anything present
    ['x in [1, null]', { x: null }, true],
    ['x in ["a"]', { x: null }, U], // null against a string element, as `x == "a"`
    ['x in [true]', { x: true }, true],
    ['x in [true]', { x: false }, false],
    ['x in []', { x: 1 }, false],
    ['x in []', {}, U],
    ['x in [1]', {}, U],
    ['x in [1]', { x: [1] }, U],
    ['x in [1]', { x: { a: 1 } }, U],
    ['x in tags', { x: 'a', tags: ['b', 'a'] }, true],
    ['x in tags', { x: 'c', tags: ['b', 'a'] }, false],
    ['x in tags', { x: 'c', tags: ['b', 1] }, U],
    ['x in tags', { x: 'c', tags: ['b', null] }, false],
    ['x in tags', { x: 'c', tags: ['b', { a: 1 }] }, U],
    ['x in tags', { x: 'c', tags: [] }, false],
    ['x in tags', { x: 'c' }, U],
    ['x in tags', { x: 'c', tags: 'abc' }, U], // a string is not an array
    ['x in tags', { x: 'c', tags: { c: 1 } }, U], // nor an object
    ['x in tags', { x: 'c', tags: null }, U],
    ['x in tags', { tags: ['c'] }, U],
    ['"c" in tags', { tags: ['a', 'c'] }, true],
    ['null in tags', { tags: ['a'] }, false], // as `null == "a"`
    ['null in tags', { tags: ['a', null] }, true],
    ['null in tags', { tags: 'a' }, U],
    ['1 in tags', { tags: ['1'] }, U],
    ['not x in [1]', { x: 2 }, true],
  ];
  it.each(table)('%s with %j', (source, args, want) => {
    expect(ev(source, args)).toBe(want);
  });

  it('explains undecidable membership without values', () => {
    expect(compileCondition('x in tags').explain(on({ x: 'c', tags: 'abc' })).why).toBe(
      'undecidable: `tags` is a string, not an array',
    );
    expect(compileCondition('x in tags').explain(on({ x: 'c', tags: [1] })).why).toBe(
      'undecidable: `x` is a string, and `tags` holds a number',
    );
    expect(compileCondition('x in [1, "2"]').explain(on({ x: 3 })).why).toBe(
      'undecidable: `x` is a number, and the list holds a string',
    );
    expect(compileCondition('x in [1]').explain(on({ x: {} })).why).toMatch(
      /^undecidable: `x` is an object; `in` tests/,
    );
    expect(compileCondition('"c" in tags').explain(on({ tags: [1] })).why).toBe(
      'undecidable: `tags` holds a number, compared with a string',
    );
  });
});

describe('bare paths are boolean arguments', () => {
  it.each([
    [{ a: true }, true],
    [{ a: false }, false],
    [{}, U],
    [{ a: 1 }, U],
    [{ a: 'true' }, U],
    [{ a: null }, U],
    [{ a: [true] }, U],
  ] as [JsonObject, Truth][])('a with %j', (args, want) => {
    expect(ev('a', args)).toBe(want);
  });
});

describe('Kleene logic', () => {
  const values: [Truth, JsonObject][] = [
    [true, { v: true }],
    [false, { v: false }],
    [U, {}],
  ];
  const and = (a: Truth, b: Truth): Truth => (a === false || b === false ? false : a === U || b === U ? U : true);
  const or = (a: Truth, b: Truth): Truth => (a === true || b === true ? true : a === U || b === U ? U : false);
  const table: [Truth, Truth][] = [];
  for (const [a] of values) for (const [b] of values) table.push([a, b]);
  const bind = (t: Truth, name: string): JsonObject => (t === U ? {} : { [name]: t });

  it.each(table)('%s and %s / %s or %s', (a, b) => {
    const args = { ...bind(a, 'a'), ...bind(b, 'b') };
    expect(ev('a and b', args)).toBe(and(a, b));
    expect(ev('a or b', args)).toBe(or(a, b));
  });
  it('spot checks', () => {
    expect(ev('a and b', { a: false })).toBe(false); // false and undecidable
    expect(ev('a and b', { b: false })).toBe(false); // undecidable and false
    expect(ev('a or b', { a: true })).toBe(true); // true or undecidable
    expect(ev('a or b', { b: true })).toBe(true);
    expect(ev('a or b', { a: false })).toBe(U);
    expect(ev('not a', {})).toBe(U);
    expect(ev('not a', { a: true })).toBe(false);
    expect(ev('a and b and c', { a: true, b: true, c: true })).toBe(true);
    expect(ev('a or b or c', { c: true })).toBe(true);
  });
  it('explains the deciding operand', () => {
    const c = compileCondition('a > 1 or b > 1');
    expect(c.explain(on({ b: 2 }))).toEqual({ truth: true, why: 'b > 1 is true' });
    expect(c.explain(on({ a: 0, b: 0 }))).toEqual({ truth: false, why: 'a > 1 is false; b > 1 is false' });
    expect(c.explain(on({ a: 0 }))).toEqual({ truth: U, why: 'undecidable: `b` is missing' });
  });
});

describe('explain never shows argument values', () => {
  it('names paths and types only', () => {
    const c = compileCondition('email == "x" or card > 5 or tags in list or flag');
    const args = {
      email: 'alice@example.com',
      card: '4111111111111111',
      tags: 'sekrit-tag',
      list: 'not-a-list',
      flag: 'maybe',
    };
    const { why } = c.explain(on(args));
    for (const v of Object.values(args)) expect(why).not.toContain(v);
  });
  it('shows string literals in single quotes', () => {
    expect(compileCondition('a == "x\'y"').explain(on({ a: 'z' })).why).toBe("a == 'x\\'y' is false");
    expect(compileCondition('a != "b"').explain(on({ a: 'z' })).why).toBe("a != 'b' is true");
    expect(compileCondition('1 < a').explain(on({ a: 'z' })).why).toBe(
      'undecidable: `a` is a string, compared with a number',
    );
    expect(compileCondition('a < b').explain(on({ a: 1, b: 'z' })).why).toBe(
      'undecidable: `a` is a number, compared with `b`, a string',
    );
    expect(compileCondition('a < b').explain(on({ a: true, b: false })).why).toBe(
      'undecidable: `a` is a boolean; < orders only numbers or strings',
    );
    expect(compileCondition('a == b').explain(on({ a: {}, b: {} })).why).toMatch(
      /^undecidable: `a` is an object; == compares/,
    );
  });
});

describe('strings, built-ins and roots', () => {
  const U = 'undecidable';
  const caller = {
    user: 'ann',
    team: 'support',
    agent: 'bot',
    roles: ['agent', 'admin'],
    claims: { sub: 'ann', tier: 'gold', org: { id: 7 } },
  };
  const run = {
    id: 'run-1',
    steps: [
      { tool: 'refund', decision: 'allow' as const },
      { tool: 'refund_all' },
      { tool: 'lookup', decision: 'allow' as const },
    ],
  };
  const input = (args: JsonObject = {}) =>
    on(args, { caller, run, context: { sandbox: { network: false }, repo: 'acme/api' }, env: 'prod' });
  const ev2 = (source: string, args: JsonObject = {}): Truth => compileCondition(source).evaluate(input(args));

  it('reads the caller, the context, the run and the environment', () => {
    expect(ev2('$caller.user == "ann" and $caller.team == "support" and $caller.agent == "bot"')).toBe(true);
    expect(ev2('$caller.roles contains "admin" and $caller.roles.0 == "agent"')).toBe(true);
    expect(ev2('$caller.claims.tier == "gold" and $caller.claims.org.id == 7')).toBe(true);
    expect(ev2('$caller.claims.missing == 1')).toBe(U);
    expect(ev2('$context.sandbox.network == false and $context.repo startswith "acme/"')).toBe(true);
    expect(ev2('$run.id == "run-1" and $run.steps.1.tool == "refund_all" and len($run.steps) == 3')).toBe(true);
    expect(ev2('count($run.steps, "refund*") == 2 and count($run.steps, "refund*", "allow") == 1')).toBe(true);
    expect(ev2('$env == "prod"')).toBe(true);
    expect(ev2('owner == $caller.user', { owner: 'ann' })).toBe(true);
    expect(ev2('owner == $caller.user', { owner: 'bob' })).toBe(false);
  });

  it('an absent root is missing, and $run.steps without a run is no steps', () => {
    const bare = on({}, { caller: { user: 'u', team: null, agent: null, roles: [] } });
    expect(compileCondition('$caller.team == "x"').evaluate(bare)).toBe(U);
    expect(compileCondition('$caller.team != "x"').evaluate(bare)).toBe(U);
    expect(compileCondition('$context.x == 1').evaluate(bare)).toBe(U);
    expect(compileCondition('$run.id == "r"').evaluate(bare)).toBe(U);
    expect(compileCondition('$env == "prod"').evaluate(bare)).toBe(U);
    expect(compileCondition('count($run.steps, "*") == 0 and len($run.steps) == 0').evaluate(bare)).toBe(true);
  });

  it('reads $approval, the cited approval the engine found for this call, and $run.approvals', () => {
    const approval = {
      kind: 'interrupted_side_effect',
      status: 'granted',
      decided_by: 'op',
      decided_at: '2026-01-01T00:00:00Z',
    };
    const cited = on({}, { approval });
    expect(compileCondition('$approval.kind == "interrupted_side_effect"').evaluate(cited)).toBe(true);
    expect(compileCondition('$approval.status == "granted" and $approval.decided_by == "op"').evaluate(cited)).toBe(
      true,
    );
    expect(compileCondition('$approval.decided_at startswith "2026-"').evaluate(cited)).toBe(true);
    // Absent (no approval cited, or not one standing for this call): undecidable, `!=` included.
    expect(compileCondition('$approval.kind == "interrupted_side_effect"').evaluate(on({}))).toBe(U);
    expect(compileCondition('$approval.kind != "x"').evaluate(on({}))).toBe(U);
    const approvals = [
      { id: 'a1', kind: 'interrupted_side_effect', status: 'granted' as const, tool: 'send' },
      { id: 'a2', kind: 'remote_mutation', tool: 'send' },
    ];
    const withRun = on({}, { run: { approvals } });
    expect(compileCondition('$run.approvals.0.kind == "interrupted_side_effect"').evaluate(withRun)).toBe(true);
    expect(compileCondition('$run.approvals.1.tool == "send" and $run.approvals.1.id == "a2"').evaluate(withRun)).toBe(
      true,
    );
    expect(compileCondition('count($run.approvals, "send") == 2 and len($run.approvals) == 2').evaluate(withRun)).toBe(
      true,
    );
    expect(compileCondition('len($run.approvals) == 0').evaluate(on({}))).toBe(true);
    // An approval without `tool` cannot be counted by tool.
    expect(
      compileCondition('count($run.approvals, "*") == 1').evaluate(on({}, { run: { approvals: [{ id: 'a' }] } })),
    ).toBe(U);
  });

  it('refuses at load what $approval and $run.approvals do not have', () => {
    expect(compileError('$approval == 1').message).toMatch(
      /`\$approval` has `kind`, `status`, `decided_by` and `decided_at`/,
    );
    expect(compileError('$approval.hash == "x"').message).toMatch(/`\$approval` has/);
    expect(compileError('$approval.kind.x == "x"').message).toMatch(/`\$approval` has/);
    expect(compileError('$approval.kind > 1').message).toMatch(/is a string/);
    expect(compileError('$run.approvals.0.tool > 1').message).toMatch(/is a string/);
    expect(compileError('$run.approval == 1').message).toMatch(/`\$run.approvals`/);
    expect(compileError('$approvals.kind == "x"').message).toMatch(/the roots are .*\$approval/);
  });

  it('a bare path still reads the arguments, even one named like a root', () => {
    expect(
      ev2('caller == 1 and context == 2 and run == 3 and env == 4', { caller: 1, context: 2, run: 3, env: 4 }),
    ).toBe(true);
  });

  it('count() is undecidable on steps that are not a list of steps', () => {
    expect(ev2('count(steps, "*") == 1', { steps: [{ tool: 'a' }] })).toBe(true);
    expect(ev2('count(steps, "*") == 1', { steps: [{ tool: 3 }] })).toBe(U);
    expect(ev2('count(steps, "*") == 1', { steps: ['a'] })).toBe(U);
    expect(ev2('count(steps, "*") == 1', { steps: 'a' })).toBe(U);
  });

  it('explains with paths and calls, never the values', () => {
    const why = (source: string, args: JsonObject): string => compileCondition(source).explain(input(args)).why;
    expect(why('argv(command) startswith ["git", "status"]', { command: 'git status; rm -rf /secret-dir' })).toMatch(
      /^undecidable: `argv\(command\)` has no value \(the command is missing or not a string, or a shell would do more than split it/,
    );
    expect(why('path(file) startswith "/repo/"', { file: '../secret-dir' })).toBe(
      'undecidable: `path(file)` has no value (the path is missing or not a string, relative, climbs above /, or holds NUL)',
    );
    expect(why('to matches "*@acme.com"', { to: ['secret@x'] })).toBe(
      'undecidable: `to` is an array; `matches` reads a string',
    );
    expect(why('lower(to) endswith "@acme.com"', { to: 'Bob@ACME.com' })).toBe(
      "lower(to) endswith '@acme.com' is true",
    );
    expect(why('$caller.team == "x"', {})).toBe("$caller.team == 'x' is false");
    for (const w of [
      why('argv(command).0 == "ls"', { command: 'secret-word' }),
      why('name contains 3', { name: 'secret-word' }),
      why('name startswith prefix', { name: 'secret-word', prefix: 1 }),
    ]) {
      expect(w).not.toContain('secret');
    }
  });

  it('lists the paths it reads, roots included, and the reads of the arguments with their uses', () => {
    const c = compileCondition('lower(to) endswith "@acme.com" and $caller.team == team and amount > 1');
    expect(c.paths).toEqual(['to', '$caller.team', 'team', 'amount']);
    expect(c.reads.map((r) => [r.text, r.column, r.use])).toEqual([
      ['to', 7, 'lower()'],
      ['team', 52, '`==` with `$caller.team` (a string)'],
      ['amount', 61, '`>` with a number literal'],
    ]);
  });
});
