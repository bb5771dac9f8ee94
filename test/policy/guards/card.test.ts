import { describe, expect, it } from 'vitest';
import { card } from '../../../src/policy/guards/card.js';

describe('the card detector alone', () => {
  it('names its finding and reads numbers of 13 to 19 digits', () => {
    expect(card.kind).toBe('card');
    expect(card.text).toBe('a card number');
    expect(card.numberDigits).toEqual({ min: 13, max: 19 });
  });

  it.each([
    '4111111111111111',
    '4111 1111 1111 1111',
    'pay 5555-5555-5555-4444 now',
    '4111.1111.1111.1111',
    '3782 822463 10005',
  ])('finds %s', (s) => {
    expect(card.test(s)).toBe(true);
  });

  it.each([
    '4111111111111112', // Luhn fails
    '1700000000008', // a Luhn-valid timestamp: 1 is no payment network
    '+4111111111111111', // a leading + makes it a phone number
    '3.4111111111111111', // a decimal
    '4111111111111111x',
    'alice@example.com',
    'DE89370400440532013000',
  ])('finds nothing in %s', (s) => {
    expect(card.test(s)).toBe(false);
  });

  it('sees only ASCII digits: folding full-width ones is the walk’s job', () => {
    expect(
      card.test('\uff14\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11\uff11'),
    ).toBe(false);
  });
});
