import { describe, expect, it } from 'vitest';
import { JsonParseError, parseJson, parseJsonWithPositions } from '../../src/json/parse.js';
import type { Position } from '../../src/json/parse.js';
import { utf8 } from './helpers.js';

const at = (line: number, column: number): Position => ({ line, column });

describe('parseJsonWithPositions', () => {
  // Line 3 ends with CRLF; the others with LF.
  const text = '{\n  "a": 1,\n  "b": [true,\r\n    {"c": "x"}]\n}';

  it('gives the line and column of every value', () => {
    const { value, values } = parseJsonWithPositions(text);
    expect(value).toEqual({ a: 1, b: [true, { c: 'x' }] });
    expect(Object.fromEntries(values)).toEqual({
      '': at(1, 1),
      '/a': at(2, 8),
      '/b': at(3, 8),
      '/b/0': at(3, 9),
      '/b/1': at(4, 5),
      '/b/1/c': at(4, 11),
    });
  });

  it('gives the line and column of every key', () => {
    const { keys } = parseJsonWithPositions(text);
    expect(Object.fromEntries(keys)).toEqual({ '/a': at(2, 3), '/b': at(3, 3), '/b/1/c': at(4, 6) });
  });

  it('counts columns in UTF-16 code units', () => {
    const { values, keys } = parseJsonWithPositions('{"😀": 1, "é": 2}');
    expect(values.get('/😀')).toEqual(at(1, 8));
    expect(keys.get('/é')).toEqual(at(1, 11));
    expect(values.get('/é')).toEqual(at(1, 16));
  });

  it('treats LF, CRLF and a lone CR as one line break each', () => {
    const { values } = parseJsonWithPositions('[\r1,\n2,\r\n3,\r\r4]');
    expect(values.get('/0')).toEqual(at(2, 1));
    expect(values.get('/1')).toEqual(at(3, 1));
    expect(values.get('/2')).toEqual(at(4, 1));
    expect(values.get('/3')).toEqual(at(6, 1));
  });

  it('escapes pointer segments (RFC 6901)', () => {
    const { values, keys } = parseJsonWithPositions('{"a/b": {"m~n": 0}}');
    expect(keys.get('/a~1b')).toEqual(at(1, 2));
    expect(values.get('/a~1b/m~0n')).toEqual(at(1, 17));
  });

  it('records empty containers and top-level scalars', () => {
    expect(Object.fromEntries(parseJsonWithPositions('  {"o": {}, "a": []}').values)).toEqual({
      '': at(1, 3),
      '/o': at(1, 9),
      '/a': at(1, 18),
    });
    expect(Object.fromEntries(parseJsonWithPositions('\n\n  "s"').values)).toEqual({ '': at(3, 3) });
  });

  it('gives the same result for bytes and for the string', () => {
    const fromBytes = parseJsonWithPositions(utf8(text));
    const fromString = parseJsonWithPositions(text);
    expect(fromBytes.value).toEqual(fromString.value);
    expect([...fromBytes.values]).toEqual([...fromString.values]);
    expect([...fromBytes.keys]).toEqual([...fromString.keys]);
  });

  it('parses the same value as parseJson, with the same errors', () => {
    expect(parseJsonWithPositions(text).value).toEqual(parseJson(text));
    for (const bad of ['{"a":1,"a":2}', '[1,]', '', '[[[1]]]']) {
      let a: unknown;
      let b: unknown;
      try {
        parseJson(bad, { maxDepth: 2 });
      } catch (e) {
        a = e;
      }
      try {
        parseJsonWithPositions(bad, { maxDepth: 2 });
      } catch (e) {
        b = e;
      }
      expect(a).toBeInstanceOf(JsonParseError);
      expect(b).toBeInstanceOf(JsonParseError);
      const ea = a as JsonParseError;
      const eb = b as JsonParseError;
      expect([eb.code, eb.offset, eb.pointer]).toEqual([ea.code, ea.offset, ea.pointer]);
    }
  });
});
