import { expect, test } from 'vitest';
import { isUuid, uuidv7 } from '../../src/kernel/uuid.js';

test('UUIDv7 layout (RFC 9562 section 5.7): timestamp, version 7, variant 10', () => {
  const now = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
  const id = uuidv7(now);
  expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(now);
  expect(isUuid(id)).toBe(true);
});

test('ids of later milliseconds sort later; ids are distinct', () => {
  const ids = Array.from({ length: 1000 }, (_, i) => uuidv7(1_700_000_000_000 + i));
  expect([...ids].sort()).toEqual(ids);
  expect(new Set(Array.from({ length: 1000 }, () => uuidv7())).size).toBe(1000);
});

test('isUuid accepts the textual form only', () => {
  expect(isUuid('0190A0C0-0000-7000-8000-000000000000')).toBe(true);
  for (const text of [
    '',
    'x',
    '0190a0c0000070008000000000000000',
    '{0190a0c0-0000-7000-8000-000000000000}',
    '0190a0c0-0000-7000-8000-00000000000g',
  ]) {
    expect(isUuid(text), text).toBe(false);
  }
});
