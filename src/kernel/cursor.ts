// The keyset cursor of approval lists: base64url("<created_at to the microsecond, UTC> <id>"), with
// " asc" after it for a list oldest first; only this service's own encoding is accepted back.
import { ListQueryError } from './errors.js';
import { isUuid } from './uuid.js';

// The instant goes to PostgreSQL as text (`::text::timestamptz`): a parameter typed timestamptz is
// serialized by postgres.js through a JS Date, which keeps milliseconds only, and the next page would
// then skip every row created in the same millisecond as the last one shown.

const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{3})\d{3}Z ([0-9a-f-]{36})( asc)?$/;

/** Newest first (the default) or oldest first. */
export type ListOrder = 'newest' | 'oldest';

export function encodeCursor(at: string, id: string, order: ListOrder = 'newest'): string {
  return Buffer.from(`${at} ${id}${order === 'oldest' ? ' asc' : ''}`, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): { at: string; id: string; order: ListOrder } {
  const invalid = new ListQueryError('invalid_cursor', 'cursor', 'cursor is not one this service issued');
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  // Buffer decoding is lenient (it skips stray characters): only our exact encoding is accepted.
  if (Buffer.from(text, 'utf8').toString('base64url') !== cursor) throw invalid;
  const match = CURSOR.exec(text);
  if (match === null) throw invalid;
  const [, seconds = '', millis = '', id = '', asc] = match;
  if (!isUuid(id)) throw invalid;
  // A real instant (no month 13, no February 30): the millisecond prefix must round-trip.
  const prefix = `${seconds}.${millis}Z`;
  const parsed = new Date(prefix);
  if (Number.isNaN(parsed.getTime()) || parsed.toISOString() !== prefix) throw invalid;
  // Years 0001–9999 only: JS Date accepts year 0000, PostgreSQL's timestamptz does not (SQLSTATE
  // 22008, a 500), and to_char's four-digit YYYY never encodes one.
  if (parsed.getUTCFullYear() < 1) throw invalid;
  return { at: text.slice(0, text.indexOf(' ')), id, order: asc === undefined ? 'newest' : 'oldest' };
}
