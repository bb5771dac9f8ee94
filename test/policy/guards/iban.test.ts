import { describe, expect, it } from 'vitest';
import { iban } from '../../../src/policy/guards/iban.js';

describe('the IBAN detector alone', () => {
  it('names its finding and never reads numbers (a JSON number holds no letters)', () => {
    expect(iban.kind).toBe('iban');
    expect(iban.text).toBe('an IBAN');
    expect(iban.numberDigits).toBeUndefined();
  });

  it.each([
    'DE89370400440532013000',
    'GB82 WEST 1234 5698 7654 32',
    'to gb82-west-1234-5698-7654-32 today',
    'NO9386011117947',
  ])('finds %s', (s) => {
    expect(iban.test(s)).toBe(true);
  });

  it.each([
    'DE88370400440532013000',
    'GB82WEST1234',
    'XGB82WEST12345698765432',
    '4111111111111111',
    'alice@example.com',
  ])('finds nothing in %s', (s) => {
    expect(iban.test(s)).toBe(false);
  });
});
