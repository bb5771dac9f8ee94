// The three-valued operators (src/policy/condition/compare.ts), called directly: each row pins one
// branch, so that turning an 'undecidable' into a plain false (which `not` would then turn into an
// allow) fails a row. The same cases through the condition language are in condition.test.ts and
// condition.precision.test.ts; the last block here checks a few end to end.
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../src/json/parse.js';
import type { JsonObject } from '../../src/json/value.js';
import {
  equals,
  isNull,
  member,
  memberOf,
  negate,
  nullMemberOf,
  order,
  type Truth,
} from '../../src/policy/condition/compare.js';
import { compileCondition } from '../../src/policy/condition/compile.js';
import { ExactNumber } from '../../src/policy/condition/values.js';
import { on } from '../helpers/condition.js';

const U = 'undecidable';
/** 2^53 + 1 as written: the same double as 2^53, another value. */
const BIG_PLUS_ONE = new ExactNumber(9007199254740992, '9007199254740993');
const BIG = 9007199254740992;
/** 1.50 as written: the same value as 1.5. */
const ONE_FIFTY = new ExactNumber(1.5, '1.50');
/** An exponent too long to compare exactly (json/decimal.ts): its double is 0. */
const ABSURD = new ExactNumber(0, '1e-99999999999999999999');

describe('equals', () => {
  it.each<[unknown, unknown, Truth]>([
    ['a', 'a', true],
    ['a', 'b', false],
    [true, true, true],
    [true, false, false],
    [1, 1, true],
    [1, 2, false],
    [ONE_FIFTY, 1.5, true],
    [1.5, ONE_FIFTY, true],
    [BIG_PLUS_ONE, BIG, U],
    [BIG, BIG_PLUS_ONE, U],
    [ABSURD, 0, U],
    [ABSURD, 1, false],
    [null, null, true],
    [1, '1', U],
    ['1', 1, U],
    [true, 'true', U],
    [null, 0, U],
    [undefined, undefined, U],
    [undefined, 1, U],
    [1, undefined, U],
    [[], [], U],
    [{}, {}, U],
    [Number.NaN, Number.NaN, U],
  ])('%j == %j is %j', (l, r, want) => {
    expect(equals(l, r)).toBe(want);
  });
});

describe('isNull', () => {
  it.each<[unknown, Truth]>([
    [null, true],
    [0, false],
    ['', false],
    [false, false],
    [[], false],
    [{}, false],
    [ONE_FIFTY, false],
    [undefined, U],
    [Number.NaN, U],
    [Number.POSITIVE_INFINITY, U],
  ])('%j == null is %j', (v, want) => {
    expect(isNull(v)).toBe(want);
  });
});

describe('negate', () => {
  it('swaps true and false and keeps undecidable', () => {
    expect([negate(true), negate(false), negate(U)]).toEqual([false, true, U]);
  });
});

describe('order', () => {
  it.each<[unknown, unknown, [Truth, Truth, Truth, Truth]]>([
    // [<, <=, >, >=]
    [1, 2, [true, true, false, false]],
    [2, 2, [false, true, false, true]],
    [3, 2, [false, false, true, true]],
    [-1, 1, [true, true, false, false]],
    ['a', 'b', [true, true, false, false]],
    ['b', 'b', [false, true, false, true]],
    ['b', 'a', [false, false, true, true]],
    ['', 'a', [true, true, false, false]],
    ['B', 'a', [true, true, false, false]], // code units: upper case first
    ['\uffff', '\u{10000}', [false, false, true, true]], // code units, not code points
    [ONE_FIFTY, 1.5, [false, true, false, true]],
    [ONE_FIFTY, 2, [true, true, false, false]],
    [BIG_PLUS_ONE, BIG, [U, U, U, U]],
    [1, '2', [U, U, U, U]],
    ['1', 2, [U, U, U, U]],
    [true, false, [U, U, U, U]],
    [null, null, [U, U, U, U]],
    [undefined, 1, [U, U, U, U]],
    [1, undefined, [U, U, U, U]],
    [[1], [2], [U, U, U, U]],
  ])('%j against %j', (l, r, want) => {
    expect([order('<', l, r), order('<=', l, r), order('>', l, r), order('>=', l, r)]).toEqual(want);
  });

  it('is undecidable for == and != (never routed here)', () => {
    expect([order('==', 1, 1), order('!=', 1, 2)]).toEqual([U, U]);
  });
});

describe('member and memberOf', () => {
  it.each<[unknown, unknown[], Truth]>([
    ['a', ['a', 'b'], true],
    ['b', ['a', 'b'], true],
    ['c', ['a', 'b'], false],
    ['c', [], false],
    [1, [2, 1], true],
    [1, [2, 3], false],
    [1.5, [ONE_FIFTY], true],
    [ONE_FIFTY, [1, 1.5], true],
    [BIG, [BIG_PLUS_ONE], U],
    [BIG_PLUS_ONE, [BIG], U],
    [BIG_PLUS_ONE, [1, BIG], U],
    [BIG_PLUS_ONE, [BIG, BIG_PLUS_ONE], true], // a match wins over an element it cannot compare with
    [true, [true], true],
    [false, [true], false],
    [null, [null], true],
    // null in the list can be compared with anything present: it is no reason to be undecidable.
    ['a', [null], false],
    [1, [null, 2], false],
    [null, ['a'], U],
    // An element of another type cannot be compared: undecidable, unless something else matches.
    ['1', [1], U],
    [1, ['1'], U],
    [1, [true], U],
    ['a', [{}], U],
    [null, [{}], U],
    [null, [[]], U],
    ['a', [['a']], U],
    ['a', [{}, 'a'], true],
    ['a', ['a', {}], true],
    [1, [Number.NaN], U],
    [1, [Number.POSITIVE_INFINITY], U],
    // x itself must be a present scalar.
    [undefined, ['a'], U],
    [undefined, [], U],
    [[], [[]], U],
    [{}, [{}], U],
    [Number.NaN, [Number.NaN], U],
  ])('%j in %j is %j', (x, list, want) => {
    expect(member(x, list)).toBe(want);
    expect(memberOf(x, list)).toBe(want);
  });

  it('memberOf is undecidable unless the right side is an array', () => {
    for (const notArray of [undefined, null, 'a', 1, {}, { 0: 'a', length: 1 }])
      expect(memberOf('a', notArray)).toBe(U);
  });
});

describe('nullMemberOf (the literal null in a path)', () => {
  it.each<[unknown, Truth]>([
    [[null], true],
    [['a', null], true],
    [[], false],
    [['a'], false],
    [[0, false, ''], false],
    // `null == {}` is false (a present value), so these are false as well.
    [[{}], false],
    [[[]], false],
    // A value JSON cannot hold (only a bug upstream makes one) cannot be compared, even with null.
    [[Number.NaN], U],
    [['a', Number.POSITIVE_INFINITY], U],
    [[Number.NaN, null], true],
    // A missing element (what a sparse array's hole reads as).
    [Array.from({ length: 1 }), U],
  ])('null in %j is %j', (arr, want) => {
    expect(nullMemberOf(arr)).toBe(want);
  });

  it('is undecidable unless the path holds an array', () => {
    for (const notArray of [undefined, null, 'a', 1, {}]) expect(nullMemberOf(notArray)).toBe(U);
  });
});

describe('through the condition language: `not` never turns an undecidable member test into an allow', () => {
  const ev = (source: string, json: string): Truth =>
    compileCondition(source).evaluate(on(parseJson(json) as JsonObject));

  it.each<[string, string, Truth]>([
    ['not (x in arr)', '{"x":null,"arr":[{}]}', U],
    ['not (x in arr)', '{"x":"a","arr":[{}]}', U],
    ['not (x in arr)', '{"x":"a","arr":[1]}', U],
    ['not (x in arr)', '{"x":"a","arr":[null]}', true],
    ['not (x in arr)', '{"x":"a","arr":"a"}', U],
    ['not (x in ["a", 1])', '{"x":"b"}', U],
    ['not (x in ["a", null])', '{"x":"b"}', true],
    ['not (null in arr)', '{"arr":[{}]}', true],
    ['not (null in arr)', '{"arr":[null]}', false],
    ['not (null in arr)', '{"arr":{}}', U],
    ['not (n in [9007199254740993])', '{"n":9007199254740992}', U],
    ['not (n < 9007199254740993)', '{"n":9007199254740992}', U],
  ])('%s over %s is %j', (source, json, want) => {
    expect(ev(source, json)).toBe(want);
  });
});
