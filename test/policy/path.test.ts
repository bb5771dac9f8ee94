// Argument paths (src/policy/path.ts): the grammar a policy names an argument with, the secret
// words it may never read, and the own-property reads. Each table row pins one edge of a check, so
// that loosening it (an unanchored or widened segment pattern, a bound off by one) fails a row.
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../src/json/parse.js';
import { numberLexeme, type JsonObject } from '../../src/json/value.js';
import { looksSecret, parseArgPath, pickPaths, readPath } from '../../src/policy/path.js';

const NAME_FIRST = 'a path starts with a name (letters, digits, _)';
const SEGMENTS = 'path segments are names or array indexes joined by dots';

describe('parseArgPath', () => {
  it.each([
    ['a', ['a']],
    ['A', ['A']],
    ['_', ['_']],
    ['_a9', ['_a9']],
    ['order', ['order']],
    ['order.total', ['order', 'total']],
    ['items.0', ['items', '0']],
    ['items.0.sku', ['items', '0', 'sku']],
    ['m.9', ['m', '9']],
    ['m.10', ['m', '10']],
    ['m.123456789', ['m', '123456789']],
    ['a.b_c.D', ['a', 'b_c', 'D']],
  ])('%j is the segments %j', (text, segments) => {
    expect(parseArgPath(text)).toEqual({ segments });
  });

  it.each([
    // The first segment is a name: neither an index nor empty.
    ['', NAME_FIRST],
    ['0', NAME_FIRST],
    ['1', NAME_FIRST],
    ['9a', NAME_FIRST],
    ['0.a', NAME_FIRST],
    ['.a', NAME_FIRST],
    ['-a', NAME_FIRST],
    ['a-', NAME_FIRST],
    [' a', NAME_FIRST],
    ['a ', NAME_FIRST],
    ['a\n', NAME_FIRST],
    ['é', NAME_FIRST],
    ['a$', NAME_FIRST],
    ['$a', NAME_FIRST],
    ['a[0]', NAME_FIRST],
    // Every later segment: a name, `0`, or an index of at most 9 digits without a leading zero.
    ['a.', SEGMENTS],
    ['a..b', SEGMENTS],
    ['a.b.', SEGMENTS],
    ['a.00', SEGMENTS],
    ['a.01', SEGMENTS],
    ['a.1234567890', SEGMENTS],
    ['a.-1', SEGMENTS],
    ['a.1a', SEGMENTS],
    ['a.b-c', SEGMENTS],
    ['a.b c', SEGMENTS],
    ['a. b', SEGMENTS],
    ['a.b\n', SEGMENTS],
    ['a.*', SEGMENTS],
    ['a.1e3', SEGMENTS],
    ['a.0x1', SEGMENTS],
    ['a.+1', SEGMENTS],
  ])('%j is refused: %s', (text, error) => {
    expect(parseArgPath(text)).toEqual({ error });
  });

  it.each([
    'password',
    'user.password',
    'auth.0.token',
    'headers.x_api_key',
    'client_secret',
    'aws.credentials',
    'privateKey',
  ])('%j names a secret and is refused, naming the segment', (text) => {
    const got = parseArgPath(text);
    const segment = text.split('.').find(looksSecret);
    expect(segment).toBeDefined();
    expect(got).toEqual({ error: `path segment "${segment}" looks like a secret and cannot be read by a policy` });
  });

  it('reports the first segment that breaks a rule', () => {
    expect(parseArgPath('token.b-c')).toEqual({
      error: 'path segment "token" looks like a secret and cannot be read by a policy',
    });
    expect(parseArgPath('a.b-c.token')).toEqual({ error: SEGMENTS });
  });
});

describe('looksSecret', () => {
  it.each([
    'password',
    'PASSWORD',
    'pass_word',
    'userPassword',
    'secret',
    'client-secret',
    'sec-ret',
    'to_k-en',
    'clientSecret',
    'token',
    'access_token',
    'tokens',
    'apikey',
    'api_key',
    'API-KEY',
    'x_api_key',
    'privatekey',
    'private_key',
    'privateKey',
    'credential',
    'credentials',
    'Credential_file',
  ])('%j looks like a secret', (segment) => {
    expect(looksSecret(segment)).toBe(true);
  });

  it.each(['a', 'user', 'pass', 'word', 'passwd', 'key', 'api', 'private', 'tok', 'secre', 'cred', 'amount', '0'])(
    '%j does not',
    (segment) => {
      expect(looksSecret(segment)).toBe(false);
    },
  );
});

describe('readPath', () => {
  const args = parseJson(
    '{"a":{"b":[10,{"c":null}],"n":1.50},"list":["x","y"],"z":null,"__proto__":{"p":1}}',
  ) as JsonObject;

  it('reads own properties and in-range indexes, naming the parent and key', () => {
    expect(readPath(args, ['a', 'b', '0'])).toEqual({
      found: true,
      value: 10,
      parent: (args.a as JsonObject).b,
      key: '0',
    });
    expect(readPath(args, ['a', 'b', '1', 'c'])).toEqual({ found: true, value: null, parent: { c: null }, key: 'c' });
    expect(readPath(args, ['list', '1'])).toEqual({ found: true, value: 'y', parent: ['x', 'y'], key: '1' });
    expect(readPath(args, ['z'])).toEqual({ found: true, value: null, parent: args, key: 'z' });
    // An own `__proto__` member is an argument like any other.
    expect(readPath(args, ['__proto__', 'p'])).toMatchObject({ found: true, value: 1, key: 'p' });
  });

  it('the empty path is the arguments themselves', () => {
    expect(readPath(args, [])).toEqual({ found: true, value: args, parent: args, key: '' });
  });

  it.each([
    [['missing']],
    [['a', 'missing']],
    [['list', '2']], // one past the end
    [['list', '3']],
    [['list', '01']],
    [['list', '1e0']],
    [['list', '']],
    [['list', ' 1']],
    [['list', '1 ']],
    [['list', '+1']],
    [['list', '-0']],
    [['list', '0x1']],
    [['list', '1.0']],
    [['list', 'length']],
    [['list', 'x']],
    [['z', 'a']], // below null
    [['a', 'n', 'x']], // below a number
    [['list', '0', 'length']], // below a string
    [['constructor']],
    [['toString']],
    [['a', 'hasOwnProperty']],
  ])('%j is not found', (segments) => {
    expect(readPath(args, segments)).toEqual({ found: false });
  });
});

describe('pickPaths', () => {
  it('copies the named paths under their text, skips missing ones, and keeps number lexemes', () => {
    const args = parseJson('{"order":{"total":1.50,"id":"o-1"},"items":[{"sku":"s-1"}]}') as JsonObject;
    const paths = ['order.total', 'items.0.sku', 'order.missing', 'items.1.sku'].map((text) => ({
      text,
      segments: text.split('.'),
    }));
    const picked = pickPaths(args, paths);
    expect(picked).toEqual({ 'order.total': 1.5, 'items.0.sku': 's-1' });
    expect(Object.keys(picked)).toEqual(['order.total', 'items.0.sku']);
    expect(numberLexeme(picked, 'order.total')).toBe('1.50');
  });

  it('gives an empty object for no paths', () => {
    expect(pickPaths({ a: 1 }, [])).toEqual({});
  });
});
