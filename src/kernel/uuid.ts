// UUIDv7 (RFC 9562 section 5.7): 48-bit Unix milliseconds, then random bits. Ids sort roughly by
// creation time, which keeps the primary-key index append-mostly and breaks listing ties sensibly.
import { randomBytes } from 'node:crypto';

export function uuidv7(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  // 48-bit big-endian timestamp; split because bitwise operators in JS are 32-bit.
  const high = Math.floor(now / 2 ** 32);
  bytes.writeUInt16BE(high & 0xffff, 0);
  bytes.writeUInt32BE(now >>> 0, 2);
  bytes[6] = 0x70 | ((bytes[6] ?? 0) & 0x0f); // version 7
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f); // variant 10
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Any RFC 9562 textual UUID (the `uuid` column's accepted form we hand to SQL). */
export function isUuid(text: string): boolean {
  return UUID.test(text);
}
