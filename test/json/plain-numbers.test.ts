// plainNumbers(): numbers written as a JavaScript client writes them back, where that is the same number.
import { describe, expect, it } from 'vitest';
import { canonicalize } from '../../src/json/canonical.js';
import { parseJson } from '../../src/json/parse.js';
import { plainNumbers } from '../../src/json/plain-numbers.js';

const plain = (text: string): string => canonicalize(plainNumbers(parseJson(text)));

describe('plainNumbers', () => {
  it('writes a number as String(n) when that is the same number', () => {
    expect(plain('{"a":450.50,"b":1e3,"c":[1.0,-0.0,2E-2],"d":{"e":10.000}}')).toBe(
      '{"a":450.5,"b":1000,"c":[1,0,0.02],"d":{"e":10}}',
    );
  });

  it('keeps the digits of a number no double holds exactly', () => {
    expect(plain('{"id":9007199254740993,"x":[0.10000000000000000001]}')).toBe(
      '{"id":9007199254740993,"x":[0.10000000000000000001]}',
    );
  });

  it('leaves the input as it was, and other values as they are', () => {
    const input = parseJson('{"a":1.50,"s":"1.50","n":null,"t":true,"__proto__":{"b":2.0}}');
    expect(plain('{"a":1.50,"s":"1.50","n":null,"t":true,"__proto__":{"b":2.0}}')).toBe(
      '{"__proto__":{"b":2},"a":1.5,"n":null,"s":"1.50","t":true}',
    );
    expect(canonicalize(input)).toBe('{"__proto__":{"b":2.0},"a":1.50,"n":null,"s":"1.50","t":true}');
  });
});
