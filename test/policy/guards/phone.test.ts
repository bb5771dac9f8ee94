import { describe, expect, it } from 'vitest';
import { phone } from '../../../src/policy/guards/phone.js';

describe('the phone detector alone', () => {
  it('names its finding and reads numbers of 10 to 15 digits', () => {
    expect(phone.kind).toBe('phone');
    expect(phone.text).toBe('a phone number');
    expect(phone.numberDigits).toEqual({ min: 10, max: 15 });
  });

  it.each(['+33 1 23 45 67 89', '+1 (555) 123-4567', '030 12345678', '555.123.4567'])('finds %s', (s) => {
    expect(phone.test(s)).toBe(true);
  });

  it.each(['555-1234', '2024-01-15 10:30:00', '192.168.100.200', '1 234 567 890', '1700000000123', 'A-1234-5678-90'])(
    'finds nothing in %s',
    (s) => {
      expect(phone.test(s)).toBe(false);
    },
  );

  it('also reads a grouped card number: the guard’s order, not the detector, reports it as a card', () => {
    expect(phone.test('3782 822463 10005')).toBe(true); // an Amex number: 15 digits in 3 groups
  });
});
