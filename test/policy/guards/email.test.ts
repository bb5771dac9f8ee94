import { describe, expect, it } from 'vitest';
import { email } from '../../../src/policy/guards/email.js';

describe('the email detector alone', () => {
  it('names its finding and never reads numbers (a JSON number holds no @)', () => {
    expect(email.kind).toBe('email');
    expect(email.text).toBe('an email address');
    expect(email.numberDigits).toBeUndefined();
  });

  it.each(['alice@example.com', 'Write to a.b+tag@mail.example.co.uk.', '<bob@exa-mple.com>'])('finds %s', (s) => {
    expect(email.test(s)).toBe(true);
  });

  it.each(['a@localhost', 'user@123.456', 'a.@x.com', 'handle @alice', 'jane\uff20example.com', '4111111111111111'])(
    'finds nothing in %s',
    (s) => {
      expect(email.test(s)).toBe(false);
    },
  );
});
