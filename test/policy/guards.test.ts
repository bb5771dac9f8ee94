import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { parseJson } from '../../src/json/parse.js';
import type { JsonObject, JsonValue } from '../../src/json/value.js';
import { GUARD_NAMES, runGuard, scanPii, type PiiKind } from '../../src/policy/guards.js';

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
  it('lists pii and runs it', () => {
    expect(GUARD_NAMES).toEqual(['pii']);
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
  const emails = ['alice@example.com', 'Write to a.b+tag@mail.example.co.uk.', 'x@y.io', 'FIRST_LAST%dept@Example.ORG', '<bob@exa-mple.com>', 'mailto:carol@example.fr?subject=x'];
  it.each(emails)('flags %s', (text) => {
    expect(kindOf(text)).toBe('email');
  });
  const notEmails = ['@', 'a@', '@example.com', 'a@b', 'a@b.c', 'a@localhost', 'user@123.456', 'foo@@bar.com', 'a.@x.com', 'a@-x.com', 'a@x-.com', 'a@x..com', 'handle @alice on chat', 'price 5@3.99'];
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
    expect(scanPii({ items: [{ text: 'ok' }, { text: 'call +33 1 23 45 67 89' }] })).toEqual({ path: '/items/1/text', kind: 'phone' });
    expect(scanPii({ 'a/b': { 'c~d': ['x', 'DE89370400440532013000'] } })).toEqual({ path: '/a~1b/c~0d/1', kind: 'iban' });
    expect(scanPii({ '': 'alice@example.com' })).toEqual({ path: '/', kind: 'email' });
  });

  it('returns the first finding in document order', () => {
    const args: JsonObject = { a: 'clean', b: { c: 'bob@example.com', d: '4111111111111111' }, e: 'carol@example.com' };
    expect(scanPii(args)).toEqual({ path: '/b/c', kind: 'email' });
    expect(scanPii({ list: ['x', ['y', '4111 1111 1111 1111']], z: 'a@example.com' })).toEqual({ path: '/list/1/1', kind: 'card' });
  });

  it('prefers checksum evidence within one string', () => {
    expect(scanPii({ t: 'alice@example.com 4111111111111111' })?.kind).toBe('card');
  });

  it('scans keys: a finding points at the object holding the key, never at the key itself', () => {
    expect(scanPii({ 'alice@example.com': 'x' })).toEqual({ path: '', kind: 'email', inKey: true });
    expect(scanPii({ to: { 'bob@example.com': true } })).toEqual({ path: '/to', kind: 'email', inKey: true });
    // An object's keys come before its values, so no path below a PII key is ever reported.
    expect(scanPii({ 'bob@example.com': { card: '4111111111111111' } })).toEqual({ path: '', kind: 'email', inKey: true });
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
  ];
  it.each(inputs)('%s', (_label, text) => {
    expect(text.length).toBeGreaterThanOrEqual(N - 40);
    // No timing assertion: a linear scan takes milliseconds, a quadratic one would hit the test timeout.
    const f = scanPii({ text });
    expect(f === null || f.path === '/text').toBe(true);
  });

  it('random strings never throw', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'0123456789 -.()+@aZ_'.split('')), maxLength: 60 }), (text) => {
        const f = scanPii({ text });
        if (f !== null) expect(f.path).toBe('/text');
      }),
      { numRuns: 3000 },
    );
  });
});
