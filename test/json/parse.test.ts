import { describe, expect, it } from 'vitest';
import { parseJson } from '../../src/json/parse.js';
import type { JsonErrorCode } from '../../src/json/parse.js';
import { numberLexeme } from '../../src/json/value.js';
import type { JsonObject, JsonValue } from '../../src/json/value.js';
import { bytesOf, parseError, sameJson, utf8 } from './helpers.js';

type ErrorCase = [name: string, input: string | Uint8Array, code: JsonErrorCode, offset: number, pointer: string];

function expectCases(cases: ErrorCase[], alsoAsBytes = true): void {
  for (const [name, input, code, offset, pointer] of cases) {
    const e = parseError(input);
    expect({ name, code: e.code, offset: e.offset, pointer: e.pointer }).toEqual({ name, code, offset, pointer });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('JsonParseError');
    // The same text given as bytes fails the same way.
    if (typeof input === 'string' && alsoAsBytes) {
      const b = parseError(utf8(input));
      expect({ name, code: b.code, offset: b.offset, pointer: b.pointer }).toEqual({ name, code, offset, pointer });
    }
  }
}

describe('parseJson: invalid UTF-8', () => {
  it('reports the byte offset of the first ill-formed sequence and the value it falls in', () => {
    expectCases([
      ['C3 28 (bad continuation)', bytesOf('{"a":"', 0xc3, 0x28, '"}'), 'invalid_utf8', 6, '/a'],
      ['overlong C0 AF', bytesOf('["x","', 0xc0, 0xaf, '"]'), 'invalid_utf8', 6, '/1'],
      ['overlong C1 BF', bytesOf('"', 0xc1, 0xbf, '"'), 'invalid_utf8', 1, ''],
      ['overlong E0 80 80', bytesOf('"', 0xe0, 0x80, 0x80, '"'), 'invalid_utf8', 1, ''],
      ['overlong F0 80 80 80', bytesOf('"', 0xf0, 0x80, 0x80, 0x80, '"'), 'invalid_utf8', 1, ''],
      ['encoded high surrogate ED A0 80', bytesOf('{"k":"', 0xed, 0xa0, 0x80, '"}'), 'invalid_utf8', 6, '/k'],
      ['encoded low surrogate ED BF BF', bytesOf('"', 0xed, 0xbf, 0xbf, '"'), 'invalid_utf8', 1, ''],
      ['above U+10FFFF: F4 90 80 80', bytesOf('"', 0xf4, 0x90, 0x80, 0x80, '"'), 'invalid_utf8', 1, ''],
      ['F5 lead byte', bytesOf('[1,', 0xf5, 0x80, 0x80, 0x80, ']'), 'invalid_utf8', 3, '/1'],
      ['FE byte', bytesOf('"', 0xfe, '"'), 'invalid_utf8', 1, ''],
      ['FF byte in a string', bytesOf('"a', 0xff, '"'), 'invalid_utf8', 2, ''],
      ['stray continuation byte', bytesOf('"', 0x80, '"'), 'invalid_utf8', 1, ''],
      ['truncated 3-byte sequence at the end', bytesOf('"ab', 0xe2, 0x82), 'invalid_utf8', 3, ''],
      ['truncated after a valid multibyte char', bytesOf('{"a":"é', 0xe2, 0x82), 'invalid_utf8', 8, '/a'],
      ['truncated 4-byte sequence at the end', bytesOf('"', 0xf0, 0x9f, 0x98), 'invalid_utf8', 1, ''],
      ['truncated sequence before a quote', bytesOf('"', 0xe2, 0x82, '"'), 'invalid_utf8', 1, ''],
      ['bad byte in a key', bytesOf('{"ok":1,"k', 0xff, '":2}'), 'invalid_utf8', 10, ''],
      ['bad bytes in a nested key', bytesOf('{"args":{"k', 0xc3, 0x28, '":1}}'), 'invalid_utf8', 11, '/args'],
      ['bad byte outside any string', bytesOf(0xff), 'invalid_utf8', 0, ''],
      ['bad byte where an element starts', bytesOf('[', 0xc3), 'invalid_utf8', 1, '/0'],
    ]);
  });

  it('accepts the boundary scalar values', () => {
    const cases: [number[], string][] = [
      [[0xc2, 0x80], '\u0080'],
      [[0xdf, 0xbf], '\u07ff'],
      [[0xe0, 0xa0, 0x80], '\u0800'],
      [[0xed, 0x9f, 0xbf], '\ud7ff'],
      [[0xee, 0x80, 0x80], '\ue000'],
      [[0xef, 0xbf, 0xbf], '\uffff'],
      [[0xf0, 0x90, 0x80, 0x80], '\u{10000}'],
      [[0xf4, 0x8f, 0xbf, 0xbf], '\u{10ffff}'],
    ];
    for (const [b, expected] of cases) expect(parseJson(bytesOf('"', ...b, '"'))).toBe(expected);
  });

  it('never substitutes U+FFFD', () => {
    expect(parseError(bytesOf('"', 0xef, 0xbf, '"')).code).toBe('invalid_utf8');
    expect(parseJson(bytesOf('"', 0xef, 0xbf, 0xbd, '"'))).toBe('\ufffd'); // a real U+FFFD is data
  });
});

describe('parseJson: byte order mark', () => {
  // Pinned choice: a BOM is not skipped. It is a syntax error at byte 0 (secure-json-parse strips it;
  // we do not, so two different byte strings never parse to the same value).
  it('rejects a leading BOM as a syntax error at offset 0', () => {
    expectCases([
      ['UTF-8 BOM bytes', bytesOf(0xef, 0xbb, 0xbf, '{}'), 'syntax', 0, ''],
      ['U+FEFF in a string input', '\ufeff{}', 'syntax', 0, ''],
      ['BOM between tokens', '[\ufeff1]', 'syntax', 1, '/0'],
    ]);
  });

  it('keeps U+FEFF inside a string as data', () => {
    expect(parseJson(bytesOf('"', 0xef, 0xbb, 0xbf, '"'))).toBe('\ufeff');
  });
});

describe('parseJson: empty input and trailing data', () => {
  it('rejects empty and whitespace-only input', () => {
    expectCases([
      ['empty string', '', 'empty', 0, ''],
      ['spaces', '   ', 'empty', 3, ''],
      ['all four whitespace characters', ' \n\t\r', 'empty', 4, ''],
    ]);
    expect(parseError(new Uint8Array(0)).code).toBe('empty');
  });

  it('rejects anything but whitespace after the value', () => {
    expectCases([
      ['second object', '{} {}', 'trailing_data', 3, ''],
      ['second number', '1 2', 'trailing_data', 2, ''],
      ['text after a string', '"a"x', 'trailing_data', 3, ''],
      ['extra bracket', '[1]]', 'trailing_data', 3, ''],
      ['extra brace', '{"a":1}}', 'trailing_data', 7, ''],
      ['literal with extra letter', 'nulll', 'trailing_data', 4, ''],
      ['two literals', 'true false', 'trailing_data', 5, ''],
      ['hex number at top level', '0x10', 'trailing_data', 1, ''],
      ['comment after the value', '[1] // c', 'trailing_data', 4, ''],
      ['NUL after the value', '{}\u0000', 'trailing_data', 2, ''],
    ]);
  });

  it('accepts whitespace around the value', () => {
    expect(parseJson(' \t\r\n{}\n\r\t ')).toEqual({});
  });
});

describe('parseJson: RFC 8259 grammar (JSONTestSuite n_ cases)', () => {
  it('rejects each with a syntax error at the offending character', () => {
    expectCases([
      ['line comment', '// c\n1', 'syntax', 0, ''],
      ['block comment', '/* c */ 1', 'syntax', 0, ''],
      ['comment inside an object', '{"a":1 /* c */}', 'syntax', 7, ''],
      ['trailing comma in an array', '[1,]', 'syntax', 3, '/1'],
      ['trailing comma in an object', '{"a":1,}', 'syntax', 7, ''],
      ['double comma', '[1,,2]', 'syntax', 3, '/1'],
      ['leading comma', '[,1]', 'syntax', 1, '/0'],
      ['single-quoted string', "['a']", 'syntax', 1, '/0'],
      ['single-quoted key', "{'a':1}", 'syntax', 1, ''],
      ['unquoted key', '{a:1}', 'syntax', 1, ''],
      ['number key', '{1:1}', 'syntax', 1, ''],
      ['hex number', '{"n":0x10}', 'syntax', 6, ''],
      ['leading zero', '010', 'syntax', 1, ''],
      ['leading zero in an array', '[010]', 'syntax', 2, '/0'],
      ['negative leading zero', '-01', 'syntax', 2, ''],
      ['leading zero with fraction', '01.5', 'syntax', 1, ''],
      ['fraction without digits', '1.', 'syntax', 2, ''],
      ['fraction without digits in an array', '[1.]', 'syntax', 3, '/0'],
      ['fraction without digits before exponent', '1.e5', 'syntax', 2, ''],
      ['no integer part', '.5', 'syntax', 0, ''],
      ['plus sign', '+1', 'syntax', 0, ''],
      ['minus alone', '-', 'syntax', 1, ''],
      ['minus letter', '-a', 'syntax', 1, ''],
      ['double minus', '--1', 'syntax', 1, ''],
      ['minus space', '- 1', 'syntax', 1, ''],
      ['exponent without digits', '1e', 'syntax', 2, ''],
      ['exponent sign without digits', '1e+', 'syntax', 3, ''],
      ['exponent letter', '1E-x', 'syntax', 3, ''],
      ['NaN', 'NaN', 'syntax', 0, ''],
      ['Infinity', 'Infinity', 'syntax', 0, ''],
      ['-Infinity', '-Infinity', 'syntax', 1, ''],
      ['NaN in an array', '[NaN]', 'syntax', 1, '/0'],
      ['raw tab in a string', '"a\tb"', 'syntax', 2, ''],
      ['raw newline in a string', '"a\nb"', 'syntax', 2, ''],
      ['raw NUL in a string', '"a\u0000b"', 'syntax', 2, ''],
      ['raw U+001F in a string', '["a\u001f"]', 'syntax', 3, '/0'],
      ['raw newline in a key', '{"a\nb":1}', 'syntax', 3, ''],
      ['\\x escape', '"\\x41"', 'syntax', 1, ''],
      ['short \\u escape', '"\\u12"', 'syntax', 1, ''],
      ['non-hex \\u escape', '"\\u12G4"', 'syntax', 1, ''],
      ['escaped single quote', '"\\\'"', 'syntax', 1, ''],
      ['\\a escape', '"\\a"', 'syntax', 1, ''],
      ['\\U escape', '"\\U0041"', 'syntax', 1, ''],
      ['backslash at the end', '"ab\\', 'syntax', 3, ''],
      ['escaped closing quote', '"\\"', 'syntax', 3, ''],
      ['key without value', '{"a"}', 'syntax', 4, ''],
      ['key without colon', '{"a" 1}', 'syntax', 5, ''],
      ['colon without value', '{"a":}', 'syntax', 5, '/a'],
      ['colon without key', '{:1}', 'syntax', 1, ''],
      ['missing comma between members', '{"a":1 "b":2}', 'syntax', 7, ''],
      ['double comma in an object', '{"a":1,,}', 'syntax', 7, ''],
      ['last key without colon', '{"a" : 1 , "b" }', 'syntax', 15, ''],
      ['missing comma between elements', '[1 2]', 'syntax', 3, ''],
      ['lone ]', ']', 'syntax', 0, ''],
      ['lone }', '}', 'syntax', 0, ''],
      ['unclosed array', '[', 'syntax', 1, '/0'],
      ['unclosed object', '{', 'syntax', 1, ''],
      ['unclosed array after a value', '["a"', 'syntax', 4, ''],
      ['unterminated string', '"abc', 'syntax', 4, ''],
      ['lone quote', '"', 'syntax', 1, ''],
      ['unclosed nesting', '{"a":[1,{"b":', 'syntax', 13, '/a/1/b'],
      ['truncated true', 'tru', 'syntax', 0, ''],
      ['truncated null', 'nul', 'syntax', 0, ''],
      ['capitalized True', 'True', 'syntax', 0, ''],
      ['capitalized NULL', 'NULL', 'syntax', 0, ''],
      ['undefined', 'undefined', 'syntax', 0, ''],
      ['form feed is not whitespace', '\f1', 'syntax', 0, ''],
      ['vertical tab is not whitespace', '\u000b1', 'syntax', 0, ''],
      ['NBSP is not whitespace', '\u00a01', 'syntax', 0, ''],
      ['U+2028 is not whitespace', '[\u20281]', 'syntax', 1, '/0'],
      ['ideographic space is not whitespace', '\u30001', 'syntax', 0, ''],
      ['value after an object member value', '{"a":1 2}', 'syntax', 7, ''],
      ['array closed by a brace', '[1}', 'syntax', 2, ''],
      ['object closed by a bracket', '{"a":1]', 'syntax', 6, ''],
    ]);
  });

  it('counts byte offsets in UTF-8, not UTF-16 units', () => {
    // '{"é":"😀", x}': 11 UTF-16 units but 14 bytes before the x.
    const e = parseError('{"é":"😀", x}');
    expect([e.code, e.offset, e.pointer]).toEqual(['syntax', 14, '']);
  });
});

describe('parseJson: duplicate keys', () => {
  it('rejects a repeated name, comparing decoded names', () => {
    expectCases([
      ['top level', '{"tool":"read_file","tool":"shell_exec"}', 'duplicate_key', 20, ''],
      ['escaped twin', '{"tool":1,"t\\u006fol":2}', 'duplicate_key', 10, ''],
      ['nested in args', '{"args":{"a":1,"a":2}}', 'duplicate_key', 15, '/args'],
      ['in an array of objects', '[{"a":1},{"b":1,"b":2}]', 'duplicate_key', 16, '/1'],
      ['deep', '{"a":{"b":[{"c":0,"c":1}]}}', 'duplicate_key', 18, '/a/b/0'],
      ['__proto__ twice', '{"__proto__":1,"__proto__":2}', 'duplicate_key', 15, ''],
      ['__proto__ and its escaped twin', '{"__proto__":1,"\\u005f_proto__":2}', 'duplicate_key', 15, ''],
      ['non-ASCII name (byte offset)', '{"é":1,"é":2}', 'duplicate_key', 8, ''],
      ['empty name', '{"":1,"":2}', 'duplicate_key', 6, ''],
    ]);
  });

  it('names the problem and where, as the spec example does', () => {
    expect(parseError('{"args":{"a":1,"a":2}}').message).toBe('duplicate key at byte 15 (/args)');
  });

  it('does not take inherited names for duplicates', () => {
    const v = parseJson('{"toString":1,"hasOwnProperty":2,"constructor":3,"valueOf":"x","__defineGetter__":4}');
    expect(Object.keys(v as JsonObject)).toEqual([
      'toString',
      'hasOwnProperty',
      'constructor',
      'valueOf',
      '__defineGetter__',
    ]);
  });

  it('allows the same name in different objects', () => {
    expect(parseJson('{"a":{"a":1},"b":[{"a":1},{"a":2}]}')).toEqual({ a: { a: 1 }, b: [{ a: 1 }, { a: 2 }] });
  });
});

describe('parseJson: nesting depth', () => {
  const arrays = (n: number): string => '['.repeat(n) + ']'.repeat(n);
  const objects = (n: number): string => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

  it('accepts 256 levels and rejects 257 (default limit)', () => {
    expect(() => parseJson(arrays(256))).not.toThrow();
    expect(() => parseJson(objects(256))).not.toThrow();
    expectCases([
      ['257 arrays', arrays(257), 'too_deep', 256, '/0'.repeat(256)],
      ['257 objects', objects(257), 'too_deep', 5 * 256, '/a'.repeat(256)],
    ]);
  });

  it('fails fast on 100,000 levels with too_deep, never a RangeError', () => {
    for (const text of [arrays(100_000), objects(100_000), '['.repeat(100_000)]) {
      const e = parseError(text);
      expect(e.code).toBe('too_deep');
      expect(e.offset).toBeLessThan(1300);
    }
  });

  it('is iterative: a caller-raised limit parses 100,000 levels without a RangeError', () => {
    let v = parseJson(arrays(100_000), { maxDepth: 100_000 });
    let depth = 0;
    while (Array.isArray(v) && v.length > 0) {
      v = v[0] ?? null;
      depth++;
    }
    expect(depth).toBe(99_999); // the innermost array is empty
  });

  it('honours maxDepth', () => {
    expect(parseJson('[[1]]', { maxDepth: 2 })).toEqual([[1]]);
    expect(parseError('[[[1]]]', { maxDepth: 2 }).code).toBe('too_deep');
    expect(parseJson('1', { maxDepth: 0 })).toBe(1);
    expect(parseError('[]', { maxDepth: 0 }).code).toBe('too_deep');
    expect(() => parseJson('1', { maxDepth: -1 })).toThrow(RangeError);
    expect(() => parseJson('1', { maxDepth: 1.5 })).toThrow(RangeError);
  });
});

describe('parseJson: lone surrogates', () => {
  it('rejects escaped lone and reversed surrogates in keys and values', () => {
    expectCases([
      ['lone high', '"\\uD800"', 'lone_surrogate', 1, ''],
      ['lone low', '["\\uDEAD"]', 'lone_surrogate', 2, '/0'],
      ['reversed pair', '{"a":"x\\uDC00\\uD800"}', 'lone_surrogate', 7, '/a'],
      ['in a key', '{"k\\uD800":1}', 'lone_surrogate', 3, ''],
      ['in a value inside args', '{"args":{"cmd":"\\uD800"}}', 'lone_surrogate', 16, '/args/cmd'],
      ['in a key inside args', '{"args":{"\\uDEAD":1}}', 'lone_surrogate', 10, '/args'],
      ['high followed by a non-surrogate escape', '"\\uD800\\u0041"', 'lone_surrogate', 1, ''],
      ['high followed by text', '"\\ud800abc"', 'lone_surrogate', 1, ''],
      ['two highs', '"\\uD800\\uD800"', 'lone_surrogate', 1, ''],
      ['high at the end of input', '"ab\\uD800', 'lone_surrogate', 3, ''],
    ]);
  });

  it('accepts escaped pairs in either case', () => {
    expect(parseJson('"\\uD83D\\uDE00"')).toBe('😀');
    expect(parseJson('"\\ud83d\\ude00"')).toBe('😀');
    expect(parseJson('{"\\uDBFF\\uDFFF":"\\uD800\\uDC00"}')).toEqual({ '\u{10ffff}': '\u{10000}' });
  });

  it('rejects raw lone surrogates in an ill-formed JS string input', () => {
    // Not as bytes: UTF-8 cannot carry a lone surrogate (TextEncoder would write U+FFFD).
    const asBytes = false;
    expectCases(
      [
        ['raw high in a value', '"a\ud800"', 'lone_surrogate', 2, ''],
        ['raw low in a key', '{"\udc00":1}', 'lone_surrogate', 2, ''],
        ['raw high in a nested value', '{"a":["\ud800"]}', 'lone_surrogate', 7, '/a/0'],
      ],
      asBytes,
    );
    expect(parseError('["\ud83d\\uDE00"]').code).toBe('lone_surrogate'); // raw high + escaped low
    expect(parseJson('"\ud83d\ude00"')).toBe('😀');
  });
});

describe('parseJson: numbers out of range', () => {
  it('rejects numbers that are not finite as a double', () => {
    expectCases([
      ['1e400', '1e400', 'number_out_of_range', 0, ''],
      ['-1e400 in an array', '[-1e400]', 'number_out_of_range', 1, '/0'],
      ['400-digit integer', '{"n":' + '9'.repeat(400) + '}', 'number_out_of_range', 5, '/n'],
      ['just above the largest double', '1.7976931348623159e308', 'number_out_of_range', 0, ''],
    ]);
  });

  it('accepts the extremes that are finite', () => {
    expect(parseJson('1.7976931348623157e308')).toBe(Number.MAX_VALUE);
    expect(parseJson('5e-324')).toBe(5e-324);
    expect(parseJson('1e-400')).toBe(0); // underflow is finite
  });
});

describe('parseJson: messages never quote the input', () => {
  const secret = 'SECRET-VALUE-123';
  it.each<[string, string | Uint8Array]>([
    ['duplicate key', `{"${secret}":1,"${secret}":2}`],
    ['control character in a value', `{"k":"${secret}\u0001"}`],
    ['unquoted value', `{"k":${secret}}`],
    ['lone surrogate in a value', `{"k":"${secret}\\uD800"}`],
    ['lone surrogate in a key', `{"${secret}\\uD800":1}`],
    ['trailing data', `{} ${secret}`],
    ['invalid UTF-8 after the value text', bytesOf(`{"k":"${secret}`, 0xff, '"}')],
    ['invalid escape', `["${secret}\\q"]`],
    ['number out of range', `{"k":1e999}`],
    ['syntax in a key', `{"${secret}\n":1}`],
  ])('%s', (_name, input) => {
    const e = parseError(input);
    expect(e.message).not.toContain('SECRET');
    expect(e.message).toMatch(/ at byte \d+/);
  });
});

describe('parseJson: values', () => {
  it('parses every value type like JSON.parse', () => {
    const text = '{"s":"x","n":1,"f":-1.5e3,"t":true,"f2":false,"z":null,"a":[1,"two",[3]],"o":{"p":{}},"e":[]}';
    expect(sameJson(parseJson(text), JSON.parse(text))).toBe(true);
  });

  it('parses top-level scalars', () => {
    expect(parseJson('true')).toBe(true);
    expect(parseJson('false')).toBe(false);
    expect(parseJson('null')).toBe(null);
    expect(parseJson(' "s" ')).toBe('s');
    expect(parseJson('42')).toBe(42);
    expect(Object.is(parseJson('-0'), -0)).toBe(true);
  });

  it('decodes every escape', () => {
    expect(parseJson('"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u4E2D\\ud83d\\ude00"')).toBe('"\\/\b\f\n\r\tAé中😀');
    expect(parseJson('"plain"')).toBe('plain');
    expect(parseJson('"a\\nb\\nc and more text after"')).toBe('a\nb\nc and more text after');
    expect(parseJson('"\u007f é 😀"')).toBe('\u007f é 😀'); // DEL and non-ASCII are fine raw
  });

  it('parses big, small and negative numbers', () => {
    const v = parseJson(
      '[0,-0,1,-1,0.5,-0.5,1e2,1E-2,1.5e+3,123456789012345,1234567890123456,9007199254740993,12345678901234567890,0.000001,0.0000001,3.141592653589793]',
    );
    expect(
      sameJson(v, [
        0,
        -0,
        1,
        -1,
        0.5,
        -0.5,
        100,
        0.01,
        1500,
        123456789012345,
        1234567890123456,
        9007199254740992,
        12345678901234567000,
        0.000001,
        1e-7,
        Math.PI,
      ]),
    ).toBe(true);
  });

  it('accepts a Uint8Array, a Buffer and a string alike', () => {
    const text = '{"a":[1,"é",{"b":null}]}';
    const expected = JSON.parse(text) as unknown;
    expect(parseJson(text)).toEqual(expected);
    expect(parseJson(utf8(text))).toEqual(expected);
    expect(parseJson(Buffer.from(text))).toEqual(expected);
  });

  it('counts object keys across the whole document against maxKeys', () => {
    expect(parseJson('{"a":{"b":1},"c":[{"d":2}]}', { maxKeys: 4 })).toEqual({ a: { b: 1 }, c: [{ d: 2 }] });
    expect(() => parseJson('{"a":{"b":1},"c":[{"d":2,"SECRET-VALUE-123":3}]}', { maxKeys: 4 })).toThrow(
      expect.objectContaining({ code: 'too_many_keys', message: expect.not.stringContaining('SECRET') }),
    );
  });

  it('parses a 50,000-key object', () => {
    const parts: string[] = [];
    for (let i = 0; i < 50_000; i++) parts.push(`"k${i}":${i}`);
    const v = parseJson('{' + parts.join(',') + '}') as JsonObject;
    expect(Object.keys(v)).toHaveLength(50_000);
    expect(v.k49999).toBe(49999);
    expect(parseError('{' + parts.join(',') + ',"k0":1}').code).toBe('duplicate_key');
  });
});

describe('parseJson: __proto__ and other prototype names are plain data', () => {
  it('makes __proto__ an own property and never touches a prototype', () => {
    const v = parseJson('{"__proto__":{"polluted":true,"isAdmin":true},"a":1}') as JsonObject;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.hasOwn(v, '__proto__')).toBe(true);
    expect(Object.keys(v)).toEqual(['__proto__', 'a']);
    expect((v['__proto__'] as JsonObject).polluted).toBe(true);
    expect((v as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  it('handles escaped, nested and array-held __proto__ and constructor keys', () => {
    const v = parseJson(
      '{"args":{"a":{"b":{"c":{"\\u005f_proto__":{"x":1},"constructor":{"prototype":{"x":1}}}}}},"list":[{"__proto__":[]}]}',
    ) as JsonObject;
    const c = (((v.args as JsonObject).a as JsonObject).b as JsonObject).c as JsonObject;
    expect(Object.keys(c)).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect(c['__proto__']).toEqual({ x: 1 });
    const first = (v.list as JsonValue[])[0] as JsonObject;
    expect(Object.getPrototypeOf(first)).toBe(Object.prototype);
    expect(Array.isArray(first['__proto__'])).toBe(true);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('returns ordinary objects', () => {
    const v = parseJson('{"a":1}') as JsonObject;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
  });
});

describe('parseJson: number lexemes', () => {
  it('records the text of numbers that String(n) would not reproduce', () => {
    const v = parseJson(
      '{"a":1.0,"b":1,"c":[1e2,100,-0,0.10,12345678901234567890,0.5,1E+2,1e-7,0.0000001]}',
    ) as JsonObject;
    expect(numberLexeme(v, 'a')).toBe('1.0');
    expect(numberLexeme(v, 'b')).toBeUndefined();
    const c = v.c as JsonValue[];
    expect(numberLexeme(c, 0)).toBe('1e2');
    expect(numberLexeme(c, 1)).toBeUndefined();
    expect(numberLexeme(c, '2')).toBe('-0');
    expect(numberLexeme(c, 3)).toBe('0.10');
    expect(numberLexeme(c, 4)).toBe('12345678901234567890');
    expect(numberLexeme(c, 5)).toBeUndefined();
    expect(numberLexeme(c, 6)).toBe('1E+2');
    expect(numberLexeme(c, 7)).toBeUndefined(); // String(1e-7) is "1e-7"
    expect(numberLexeme(c, 8)).toBe('0.0000001');
    expect(sameJson(c, [100, 100, -0, 0.1, 12345678901234567890, 0.5, 100, 1e-7, 1e-7])).toBe(true);
  });

  it('loses the lexeme of a top-level number (no container to hold it)', () => {
    expect(parseJson('1.0')).toBe(1);
  });
});
