// The one duration grammar (src/policy/duration.ts), read by the settings, the policy files and the
// CLI alike: a positive whole number with an optional unit; a bare number is seconds.
import { describe, expect, it } from 'vitest';
import { isBareNumber, parseDuration } from '../../src/policy/duration.js';

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['90s', 90_000],
    ['30m', 1_800_000],
    ['24h', 86_400_000],
    ['7d', 604_800_000],
    // A bare number is seconds, never milliseconds: APPROVAL_TTL=3600 is an hour.
    ['3600', 3_600_000],
    ['1', 1000],
    [' 10s\n', 10_000], // an env file's stray whitespace
    [60, 60_000], // a policy's `per: 60`
  ] as const)('%j is %d ms', (value, ms) => {
    expect(parseDuration(value)).toBe(ms);
  });

  it.each([
    '',
    '0',
    '0s',
    '1w',
    '-5s',
    '1.5h',
    '1.5',
    'h',
    '10 s',
    '10S',
    '1e3',
    '0x10',
    '9999999999999999d',
    0,
    -1,
    1.5,
    Number.NaN,
  ])('refuses %j', (value) => {
    expect(parseDuration(value)).toBeNull();
  });

  it('tells digits alone from a duration with a unit', () => {
    expect(isBareNumber('3600')).toBe(true);
    expect(isBareNumber('3600s')).toBe(false);
    expect(isBareNumber('soon')).toBe(false);
  });
});
