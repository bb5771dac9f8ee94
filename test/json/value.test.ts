import { describe, expect, it } from 'vitest';
import { jsonPointer } from '../../src/json/pointer.js';
import { isJsonObject, numberLexeme, numberLexemes, setNumberLexeme, setOwn } from '../../src/json/value.js';
import type { JsonObject } from '../../src/json/value.js';

describe('isJsonObject', () => {
  it('accepts plain and null-prototype objects only', () => {
    expect(isJsonObject({})).toBe(true);
    expect(isJsonObject(Object.create(null))).toBe(true);
    expect(isJsonObject([])).toBe(false);
    expect(isJsonObject(null)).toBe(false);
    expect(isJsonObject('x')).toBe(false);
    expect(isJsonObject(new Date())).toBe(false);
    expect(isJsonObject(new Map())).toBe(false);
    expect(isJsonObject(new (class {})())).toBe(false);
  });
});

describe('setOwn', () => {
  it('assigns ordinary keys', () => {
    const o: JsonObject = {};
    setOwn(o, 'a', 1);
    expect(o).toEqual({ a: 1 });
  });

  it('makes __proto__ an own, enumerable, writable data property without touching the prototype', () => {
    const o: JsonObject = {};
    setOwn(o, '__proto__', { polluted: true });
    expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(o, '__proto__')).toEqual({
      value: { polluted: true },
      enumerable: true,
      writable: true,
      configurable: true,
    });
    expect((o as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(o)).toEqual(['__proto__']);
  });
});

describe('number lexemes', () => {
  it('are stored per container and key, array indexes as decimal strings', () => {
    const arr = [1, 100];
    const obj: JsonObject = { n: 100 };
    setNumberLexeme(arr, 1, '1e2');
    setNumberLexeme(obj, 'n', '100.0');
    expect(numberLexeme(arr, 1)).toBe('1e2');
    expect(numberLexeme(arr, '1')).toBe('1e2');
    expect(numberLexeme(arr, 0)).toBeUndefined();
    expect(numberLexeme(obj, 'n')).toBe('100.0');
    expect(numberLexeme({}, 'n')).toBeUndefined();
    expect([...(numberLexemes(obj) ?? [])]).toEqual([['n', '100.0']]);
  });

  it('reject text that is not a JSON number', () => {
    for (const bad of ['', '1.', '.5', '+1', '01', 'NaN', 'Infinity', '0x10', ' 1', '1e']) {
      expect(() => setNumberLexeme({}, 'n', bad)).toThrow(TypeError);
    }
  });
});

describe('jsonPointer', () => {
  it('escapes ~ and / (RFC 6901)', () => {
    expect(jsonPointer([])).toBe('');
    expect(jsonPointer(['a', 0, 'b'])).toBe('/a/0/b');
    expect(jsonPointer(['a/b', 'm~n', '~1', ''])).toBe('/a~1b/m~0n/~01/');
  });
});
