import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { parseJson } from '../../src/json/parse.js';
import type { JsonObject, JsonValue } from '../../src/json/value.js';
import { GUARD_NAMES, runGuard, scanPii, type PiiKind } from '../../src/policy/guards.js';
import { runs } from '../helpers/runs.js';

function kindOf(text: string): PiiKind | null {
  return scanPii({ text })?.kind ?? null;
}

/** Appends the Luhn check digit to a digit string. */
function withLuhn(body: string): string {
  for (let d = 0; d <= 9; d++) {
    const candidate = body + String(d);
    let sum = 0;
    for (let i = 0; i < candidate.length; i++) {
      let n = Number(candidate[candidate.length - 1 - i]);
      if (i % 2 === 1) {
        n *= 2;
        if (n > 9) n -= 9;
      }
      sum += n;
    }
    if (sum % 10 === 0) return candidate;
  }
  throw new Error('unreachable');
}

describe('guard registry', () => {
  it('lists pii, secrets and pattern, and runs the fixed ones', () => {
    expect(GUARD_NAMES).toEqual(['pii', 'secrets', 'pattern']);
    expect(runGuard('secrets', { out: ['ok', 'key AKIAIOSFODNN7EXAMPLE'] })).toEqual({
      path: '/out/1',
      kind: 'aws_access_key',
    });
    expect(Object.isFrozen(GUARD_NAMES)).toBe(true);
    expect(runGuard('pii', { note: 'mail alice@example.com' })).toEqual({ path: '/note', kind: 'email' });
    expect(runGuard('pii', { note: 'nothing here' })).toBeNull();
  });
});

describe('card numbers (Luhn)', () => {
  const cards = [
    '4111111111111111',
    '4111 1111 1111 1111',
    '4111-1111-1111-1111',
    '5555 5555 5555 4444',
    '6011111111111117',
    '378282246310005', // Amex, 15 digits
    '3782 822463 10005', // Amex grouping 4-6-5
    '4222222222222', // 13 digits
    withLuhn('400000000000000000'), // 19 digits
    withLuhn('6200 0000 0000 0000 00'.replaceAll(' ', '')),
  ];
  it.each(cards)('flags %s', (card) => {
    expect(kindOf(card)).toBe('card');
    expect(kindOf(`pay with ${card}, thanks`)).toBe('card');
    expect(kindOf(`card:${card}.`)).toBe('card');
    expect(kindOf(`(${card})`)).toBe('card');
  });

  it('finds a card inside a longer run of groups', () => {
    expect(kindOf('4111 1111 1111 1111 123')).toBe('card'); // followed by a CVV
    expect(kindOf('exp 12 26 4111 1111 1111 1111')).toBe('card');
  });

  const notCards = [
    '4111111111111112', // 16 digits failing Luhn
    '4111 1111 1111 1112',
    '5555 5555 5555 4445',
    '411111111111', // 12 digits
    '41111111111111111111113', // 23 digits: not a card, whatever its checksum
    withLuhn('4111111111111111111') + '0', // 21 digits
    '4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1', // single digits are a list, not a card
    '4111111111111111x', // glued to a letter: an identifier
    'id4111111111111111',
    '4111111111111111.5', // a decimal
    'order 12345, qty 3',
    withLuhn('170000000012'), // a Luhn-valid millisecond timestamp: 1 is no payment network
    withLuhn('900000000000000'), // Luhn-valid 16 digits starting 9
    withLuhn('700000000000000').replace(/(\d{4})(?=\d)/g, '$1 '), // grouped, starting 7
  ];
  it.each(notCards)('does not flag %s', (text) => {
    expect(kindOf(text)).not.toBe('card');
  });
});

describe('IBAN (ISO 13616 mod 97)', () => {
  const ibans = [
    'GB82 WEST 1234 5698 7654 32',
    'GB82WEST12345698765432',
    'DE89370400440532013000',
    'DE89 3704 0044 0532 0130 00',
    'FR1420041010050500013M02606',
    'FR14 2004 1010 0505 0001 3M02 606',
    'NL91ABNA0417164300',
    'NO9386011117947', // 15 characters, the shortest
    'MT84MALT011000012345MTLCAST001S', // 31 characters
    'gb82west12345698765432', // typed in lowercase
  ];
  it.each(ibans)('flags %s', (iban) => {
    expect(kindOf(iban)).toBe('iban');
    expect(kindOf(`IBAN: ${iban}.`)).toBe('iban');
    expect(kindOf(`pay to ${iban} today`)).toBe('iban');
    expect(kindOf(`${iban} is mine`)).toBe('iban'); // short words after a grouped IBAN
  });

  const notIbans = [
    'GB83 WEST 1234 5698 7654 32', // wrong check digits
    'GB82 WEST 1234 5698 7654 33', // a typo elsewhere
    'DE88370400440532013000',
    'DE8937040044053201300', // one character short
    'GB82WEST1234', // too short
    'XGB82WEST12345698765432', // glued to a letter
    'GB82 WEST 12345 698 7654 32', // not groups of 4
    'ABCD1234567890123', // no check digits
  ];
  it.each(notIbans)('does not flag %s', (text) => {
    expect(kindOf(text)).not.toBe('iban');
  });
});

describe('email', () => {
  const emails = [
    'alice@example.com',
    'Write to a.b+tag@mail.example.co.uk.',
    'x@y.io',
    'FIRST_LAST%dept@Example.ORG',
    '<bob@exa-mple.com>',
    'mailto:carol@example.fr?subject=x',
  ];
  it.each(emails)('flags %s', (text) => {
    expect(kindOf(text)).toBe('email');
  });
  const notEmails = [
    '@',
    'a@',
    '@example.com',
    'a@b',
    'a@b.c',
    'a@localhost',
    'user@123.456',
    'foo@@bar.com',
    'a.@x.com',
    'a@-x.com',
    'a@x-.com',
    'a@x..com',
    'handle @alice on chat',
    'price 5@3.99',
  ];
  it.each(notEmails)('does not flag %s', (text) => {
    expect(kindOf(text)).not.toBe('email');
  });
});

describe('phone numbers', () => {
  const phones = [
    '+33 1 23 45 67 89',
    '+1 (555) 123-4567',
    '+44 20 7946 0958',
    '+44 (0)20 7946 0958',
    '+4915112345678',
    '+49 151 1234 5678',
    '+1.555.123.4567',
    'call (555) 123-4567 now',
    '555-123-4567',
    '555.123.4567',
    '01 23 45 67 89',
    '030 12345678',
    'ring me on 020 7946 0958.',
  ];
  it.each(phones)('flags %s', (text) => {
    expect(kindOf(text)).toBe('phone');
  });

  const notPhones = [
    '12345',
    'room 101',
    '555-1234', // 7 digits
    '+1234567', // 7 digits after +
    '+1234567890123456', // 16 digits
    'order A-1234',
    'A-1234-5678-90',
    'SKU-123-456-7890',
    '2024-01-15',
    '2024-01-15 10:30:00',
    '2024-01-15T10:30:00Z',
    'between 2024-01-15 and 2024-02-15',
    '1700000000', // a timestamp: no separators
    '1700000000123',
    '192.168.100.200',
    '1 234 567 890',
    'total 12 345 678 EUR',
    '3.14159265358979',
    'v1.2.3.4.5.6.7.8.9.10',
    '10:30:45:12:34',
    'x+12345678901',
    '1+123456789',
  ];
  it.each(notPhones)('does not flag %s', (text) => {
    expect(kindOf(text)).toBeNull();
  });
});

describe('finding paths and document order', () => {
  it('points at the string value with a JSON pointer', () => {
    expect(scanPii({ note: 'alice@example.com' })).toEqual({ path: '/note', kind: 'email' });
    expect(scanPii({ items: [{ text: 'ok' }, { text: 'call +33 1 23 45 67 89' }] })).toEqual({
      path: '/items/1/text',
      kind: 'phone',
    });
    expect(scanPii({ 'a/b': { 'c~d': ['x', 'DE89370400440532013000'] } })).toEqual({
      path: '/a~1b/c~0d/1',
      kind: 'iban',
    });
    expect(scanPii({ '': 'alice@example.com' })).toEqual({ path: '/', kind: 'email' });
  });

  it('returns the first finding in document order', () => {
    const args: JsonObject = { a: 'clean', b: { c: 'bob@example.com', d: '4111111111111111' }, e: 'carol@example.com' };
    expect(scanPii(args)).toEqual({ path: '/b/c', kind: 'email' });
    expect(scanPii({ list: ['x', ['y', '4111 1111 1111 1111']], z: 'a@example.com' })).toEqual({
      path: '/list/1/1',
      kind: 'card',
    });
  });

  it('prefers checksum evidence within one string', () => {
    expect(scanPii({ t: 'alice@example.com 4111111111111111' })?.kind).toBe('card');
  });

  it('scans keys: a finding points at the object holding the key, never at the key itself', () => {
    expect(scanPii({ 'alice@example.com': 'x' })).toEqual({ path: '', kind: 'email', inKey: true });
    expect(scanPii({ to: { 'bob@example.com': true } })).toEqual({ path: '/to', kind: 'email', inKey: true });
    // An object's keys come before its values, so no path below a PII key is ever reported.
    expect(scanPii({ 'bob@example.com': { card: '4111111111111111' } })).toEqual({
      path: '',
      kind: 'email',
      inKey: true,
    });
    expect(scanPii({ a: 'clean', b: 'plain' })).toBeNull();
  });

  it('scans numbers as written: a card number sent as a JSON number is a card number', () => {
    expect(scanPii({ n: 4111111111111111 })).toEqual({ path: '/n', kind: 'card' });
    expect(scanPii({ list: [1, 4111111111111111] })).toEqual({ path: '/list/1', kind: 'card' });
    // Beyond double precision the recorded lexeme is what is scanned (19-digit card, Luhn-valid).
    const big = parseJson(Buffer.from('{"n": 6011000990139424000}')) as JsonObject;
    expect(scanPii(big)).toBeNull(); // not Luhn-valid as written
    const card19 = parseJson(Buffer.from('{"n": 4111111111111111110}')) as JsonObject;
    expect(scanPii(card19)).toEqual({ path: '/n', kind: 'card' });
    // Ordinary numbers are not PII: amounts, ids and timestamps (a Luhn-valid one included).
    expect(scanPii({ since: Number(withLuhn('170000000012')) })).toBeNull();
    expect(scanPii({ amount: 120.5, id: 1234567890, ts: 1700000000123, n: -0, e: 1e21 })).toBeNull();
    expect(scanPii({ b: true, z: null, e: [], o: {} })).toBeNull();
    expect(scanPii({})).toBeNull();
  });

  it('scans an own __proto__ key as data, and never the prototype', () => {
    const args = JSON.parse('{"__proto__": {"mail": "alice@example.com"}}') as JsonObject;
    expect(scanPii(args)).toEqual({ path: '/__proto__/mail', kind: 'email' });
    const proto = Object.prototype as Record<string, unknown>;
    proto.polluted = 'alice@example.com';
    try {
      expect(scanPii({ a: 'x', o: {} })).toBeNull();
    } finally {
      delete proto.polluted;
    }
  });

  it('handles deep arguments without recursion', () => {
    let v: JsonValue = 'alice@example.com';
    for (let i = 0; i < 10_000; i++) v = i % 2 === 0 ? [v] : { k: v };
    const found = scanPii({ root: v });
    expect(found?.kind).toBe('email');
    expect(found?.path.startsWith('/root/')).toBe(true);
    expect(found?.path.split('/').length).toBe(10_002);
  });

  it('never carries the matched value', () => {
    const values = ['alice@example.com', '4111 1111 1111 1111', 'GB82 WEST 1234 5698 7654 32', '+33 1 23 45 67 89'];
    for (const v of values) {
      const f = scanPii({ note: `see ${v}` });
      expect(f).not.toBeNull();
      expect(Object.keys(f ?? {}).sort()).toEqual(['kind', 'path']);
      expect(JSON.stringify(f)).not.toContain(v);
      expect(JSON.stringify(f)).not.toContain(v.slice(0, 8));
    }
  });
});

describe('a number is scanned as written and as its integer value', () => {
  const parsed = (body: string): JsonObject => parseJson(Buffer.from(body)) as JsonObject;

  // Every lexeme here is the JSON number 4111111111111111; parseJson keeps the text as written.
  const cards = [
    '4111111111111111.0',
    '4111111111111111.000',
    '4.111111111111111e15',
    '4111111111111111E0',
    '4.111111111111111E+15',
    '41111111111111110e-1',
    '0.4111111111111111e16',
    '-4.111111111111111e15',
  ];
  it.each(cards)('flags %s', (lexeme) => {
    expect(scanPii(parsed(`{"ref": ${lexeme}}`))).toEqual({ path: '/ref', kind: 'card' });
    expect(scanPii(parsed(`{"list": [1, ${lexeme}]}`))).toEqual({ path: '/list/1', kind: 'card' });
  });

  it('agrees with the plain number (arguments built without lexemes)', () => {
    expect(scanPii({ ref: 4111111111111111 })).toEqual(scanPii(parsed('{"ref": 4111111111111111.0}')));
  });

  it('skips short numbers, but not a short one with an exponent (2.6e15 is the Luhn-valid 2600000000000000)', () => {
    expect(
      scanPii(parsed(`{"a": [${Array.from({ length: 1000 }, (_, i) => `${i}.0`).join(',')}], "b": 1234567}`)),
    ).toBeNull();
    expect(scanPii(parsed('{"a": [1, 2.6e15]}'))).toEqual({ path: '/a/1', kind: 'card' });
    expect(scanPii({ a: 2600000000000000 })).toEqual({ path: '/a', kind: 'card' });
    expect(scanPii(parsed('{"tel": 5551234567}'))).toEqual(scanPii({ tel: '5551234567' }));
  });

  it('reads a number as the integer its double is, as a tool reading doubles would', () => {
    expect(scanPii(parsed('{"a": 4111111111111110.9}'))).toEqual({ path: '/a', kind: 'card' });
    expect(scanPii(parsed('{"a": [0, 41111111111111109e-1]}'))).toEqual({ path: '/a/1', kind: 'card' });
    expect(scanPii(parsed('{"a": 4111111111111111.5}'))).toBeNull(); // the double is 4111111111111111.5: no integer
  });

  it('expands a 19-digit integer written with an exponent', () => {
    const card19 = withLuhn('411111111111111111');
    expect(scanPii(parsed(`{"n": ${card19[0]}.${card19.slice(1)}e18}`))).toEqual({ path: '/n', kind: 'card' });
  });

  const notCards = [
    '4111111111111111.5', // not an integer: no card
    '4.1111111111111115e15', // the same value
    `273.${withLuhn('273150000000000').slice(3)}`, // a decimal whose digits are Luhn-valid
    `0.${withLuhn('411111111111111')}`,
    '4.111111111111111e25', // an integer of 26 digits: beyond any card
    '1.7000000000123e12', // a millisecond timestamp
    '120.50',
    '3.14159',
    '-0.0',
  ];
  it.each(notCards)('does not flag %s', (lexeme) => {
    expect(scanPii(parsed(`{"n": ${lexeme}, "list": [${lexeme}]}`))).toBeNull();
  });
});

describe('card and IBAN groups split by everyday separators', () => {
  const groups = ['4111', '1111', '1111', '1111'];
  const separators: [string, string][] = [
    ['NBSP', '\u00a0'],
    ['narrow NBSP', '\u202f'],
    ['thin space', '\u2009'],
    ['ideographic space', '\u3000'],
    ['tab', '\t'],
    ['newline', '\n'],
    ['CRLF', '\r\n'],
    ['dot', '.'],
    ['slash', '/'],
    ['double space', '  '],
    ['spaced dash', ' - '],
    ['en dash', '\u2013'],
    ['non-breaking hyphen', '\u2011'],
  ];
  it.each(separators)('flags a card split by %s', (_label, sep) => {
    expect(kindOf(groups.join(sep))).toBe('card');
    expect(kindOf(`pay with ${groups.join(sep)} thanks`)).toBe('card');
    expect(kindOf(`Amex ${['3782', '822463', '10005'].join(sep)}`)).toBe('card');
  });

  it('flags a card whose groups mix spaces and dashes', () => {
    expect(kindOf('4111 1111-1111\u00a01111')).toBe('card');
  });

  const ibans = [
    'GB82-WEST-1234-5698-7654-32',
    'GB82\u00a0WEST\u00a01234\u00a05698\u00a07654\u00a032',
    'GB82.WEST.1234.5698.7654.32',
    'DE89\t3704\t0044\t0532\t0130\t00',
    'FR14  2004  1010  0505  0001  3M02  606',
    'gb82-west-1234-5698-7654-32',
  ];
  it.each(ibans)('flags the IBAN %s', (iban) => {
    expect(kindOf(iban)).toBe('iban');
    expect(kindOf(`IBAN: ${iban} today`)).toBe('iban');
  });

  const luhnValid = withLuhn('423456789012345'); // 4234567890123456
  const orderId = withLuhn('415555123456789').slice(0, -1) + '7'; // the same shape, failing Luhn
  const notCards = [
    '1.2.3.4',
    'v1.2.3.4.5.6.7.8.9.10',
    '2024.01.15',
    '2024/01/15 2024/02/15',
    '15.01.2024 10.30',
    '3.14159',
    '3.14159265358979',
    '192.168.100.200',
    '10.0.0.1 10.0.0.2 10.0.0.3',
    orderId.replace(/(\d{4})(?=\d)/g, '$1 '), // a phone-like order id
    orderId.replace(/(\d{4})(?=\d)/g, '$1.'),
    '12 34 56 78 90 12 34 56 78', // small numbers, however separated
    '10  20  30  40  50  60  70  80',
    '1\t2\t3\t4\t5\t6\t7\t8\t9\t10\t11\t12\t13',
    '200  300  400  500  600', // 15 digits failing Luhn
    '1200\n3400\n5600\n7800', // a column of amounts: starts with 1
    `${luhnValid.slice(0, 4)}.${luhnValid.slice(4, 8)} ${luhnValid.slice(8, 12)}.${luhnValid.slice(12)}`, // two decimals
    `${luhnValid.slice(0, 13)}.${luhnValid.slice(13)}`, // one decimal point: a number, not groups
    `3.${luhnValid}`,
    `${luhnValid}.5`,
    `${luhnValid}/2`,
    `12/2026 ${luhnValid.slice(0, 12)}`, // too few digits after the date
    'total 12\u00a0345\u00a0678 EUR',
  ];
  it.each(notCards)('does not flag %j', (text) => {
    expect(kindOf(text)).not.toBe('card');
  });

  it.each([
    '1.2.3.4',
    '2024.01.15',
    '3.14159',
    '192.168.100.200',
    '12 34 56 78 90 12 34 56 78',
    'total 12\u00a0345\u00a0678 EUR',
  ])('finds nothing in %j', (text) => {
    expect(kindOf(text)).toBeNull();
  });

  it('keeps the IBAN checksum whatever the separator', () => {
    expect(kindOf('GB83-WEST-1234-5698-7654-32')).toBeNull();
    expect(kindOf('GB82.WEST.1234.5698.7654.33')).not.toBe('iban');
    expect(kindOf('GB82\u00a0WEST\u00a01234\u00a05698\u00a07654\u00a033')).not.toBe('iban');
  });
});

describe('Unicode look-alikes are folded', () => {
  const fullWidth = (t: string): string =>
    t.replace(/[0-9A-Za-z@+]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));
  const invisibles: [string, string][] = [
    ['zero-width space', '\u200b'],
    ['zero-width non-joiner', '\u200c'],
    ['zero-width joiner', '\u200d'],
    ['word joiner', '\u2060'],
    ['BOM', '\ufeff'],
    ['soft hyphen', '\u00ad'],
    ['left-to-right mark', '\u200e'],
    ['variation selector', '\ufe0f'],
  ];
  it.each(invisibles)('sees through a %s between the digits and in an email', (_label, ch) => {
    expect(kindOf('4111111111111111'.split('').join(ch))).toBe('card');
    expect(kindOf(`4111${ch} 1111 1111 1111`)).toBe('card');
    expect(kindOf(`jane${ch}@example.com`)).toBe('email');
    expect(kindOf(`ja${ch}ne@exam${ch}ple.com`)).toBe('email');
    expect(kindOf(`GB82${ch}WEST12345698765432`)).toBe('iban');
  });

  it('folds full-width and other compatibility forms (NFKC)', () => {
    expect(kindOf(fullWidth('4111111111111111'))).toBe('card');
    expect(kindOf(fullWidth('4111 1111 1111 1111').replaceAll(' ', '\u3000'))).toBe('card');
    expect(kindOf('jane\uff20example.com')).toBe('email');
    expect(kindOf('jane\ufe6bexample.com')).toBe('email'); // small commercial at
    expect(kindOf(fullWidth('jane@example.com'))).toBe('email');
    expect(kindOf(fullWidth('GB82WEST12345698765432'))).toBe('iban');
    expect(kindOf(fullWidth('+33 1 23 45 67 89'))).toBe('phone');
    expect(kindOf('+33\u00a01\u00a023\u00a045\u00a067\u00a089')).toBe('phone');
    const bold = '4111111111111111'.replace(/\d/g, (d) => String.fromCodePoint(0x1d7ce + Number(d))); // mathematical bold digits
    expect(kindOf(bold)).toBe('card');
  });

  it('drops combining marks on digits (keycaps, accents)', () => {
    const keycaps = '4111111111111111'
      .split('')
      .map((d) => `${d}\ufe0f\u20e3`)
      .join('');
    expect(kindOf(keycaps)).toBe('card');
    expect(kindOf('4111111111111111'.split('').join('\u0301'))).toBe('card');
  });

  it('scans folded keys too, and reports the JSON pointer of the value or of the object holding the key', () => {
    expect(scanPii({ to: { 'jane\uff20example.com': true } })).toEqual({ path: '/to', kind: 'email', inKey: true });
    expect(scanPii({ a: { 'b/c': ['x', 'jane\u200b@example.com'] } })).toEqual({ path: '/a/b~1c/1', kind: 'email' });
    const f = scanPii({ note: `card ${fullWidth('4111111111111111')}` });
    expect(f).toEqual({ path: '/note', kind: 'card' });
  });

  const clean = [
    'café crème, 12,50 €',
    'naïve résumé',
    'order\u200b12345',
    'Zürich 8001',
    '東京都 〒100-0001',
    'ﬁle ①②③',
    'x² + y² = z²',
    'e\u0301t\u00e9',
  ];
  it.each(clean)('finds nothing in %j', (text) => {
    expect(kindOf(text)).toBeNull();
  });
});

describe('adversarial strings are scanned in linear time', () => {
  const N = 100_000;
  const inputs: [string, string][] = [
    ['local chars then @', 'a'.repeat(N) + '@'],
    ['@ then domain chars', '@' + 'a'.repeat(N)],
    ['all @', '@'.repeat(N)],
    ['a@ repeated', 'a@'.repeat(N / 2)],
    ['a@a. repeated', 'a@a.'.repeat(N / 4)],
    ['dots and dashes', 'a.-'.repeat(N / 3) + '@'],
    ['digits', '4'.repeat(N)],
    ['digit groups', '4111 '.repeat(N / 5)],
    ['dash groups', '1-'.repeat(N / 2)],
    ['short groups', '12 '.repeat(N / 3)],
    ['plus digits', '+1'.repeat(N / 2)],
    ['parens', '(1) '.repeat(N / 4)],
    ['iban-like groups', 'GB82 '.repeat(N / 5)],
    ['iban-like compact', 'GB82'.repeat(N / 4)],
    ['alnum', 'A1'.repeat(N / 2)],
    ['mixed', 'x@y.z 4111-1111 +33 (0) GB82 WEST '.repeat(N / 32)],
    ['NBSP groups', '4111\u00a0'.repeat(N / 5)],
    ['dotted groups', '4111.'.repeat(N / 5)],
    ['separator runs', '4111 - '.repeat(N / 7)],
    ['long separator runs', '4111 -. '.repeat(N / 8)],
    ['dashed iban-like groups', 'GB82-'.repeat(N / 5)],
    ['zero-width digits', '4\u200b'.repeat(N / 2)],
    ['full-width digits', '\uff14\uff11'.repeat(N / 2)],
    ['full-width @', 'a\uff20'.repeat(N / 2)],
    ['NFKC expansion', '\ufdfa'.repeat(N)], // each folds to 18 characters
  ];
  it.each(inputs)('%s', (_label, text) => {
    expect(text.length).toBeGreaterThanOrEqual(N - 40);
    // No timing assertion: a linear scan takes milliseconds, a quadratic one would hit the test timeout.
    const f = scanPii({ text });
    expect(f === null || f.path === '/text').toBe(true);
  });

  it('random strings never throw', () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.constantFrom(...'0123456789 -.()+@aZ_/\t\u00a0\u200b\uff14\uff20\u0301'.split('')),
          maxLength: 60,
        }),
        (text) => {
          const f = scanPii({ text });
          if (f !== null) expect(f.path).toBe('/text');
        },
      ),
      { numRuns: runs(3000) },
    );
  });
});
