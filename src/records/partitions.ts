// The decision store's partitions (migrations/0013_decision_records.sql): one per UTC day, named
// decisions_YYYYMMDD, created ahead of need and dropped whole once older than the retention: a
// DROP TABLE, never a DELETE of rows (no dead rows, no vacuum debt, the space back at once).
import type { Sql } from 'postgres';

export const DAY_MS = 86_400_000;
/** Today and the next two days: a writer that stops maintaining (a stalled database) still has room past midnight. */
export const DAYS_AHEAD = 2;
const NAME = /^decisions_(\d{4})(\d{2})(\d{2})$/;

/** The UTC day (its midnight, ms) of an instant. */
export function dayOf(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

export function partitionName(dayMs: number): string {
  return `decisions_${new Date(dayMs).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

/** Creates the partitions of the day of `nowMs` and DAYS_AHEAD days after it, when missing. */
export async function ensurePartitions(sql: Sql, nowMs: number): Promise<void> {
  const today = dayOf(nowMs);
  for (let d = 0; d <= DAYS_AHEAD; d++) {
    const from = today + d * DAY_MS;
    // Identifiers and bounds are made here from a number, never from input.
    try {
      await sql.unsafe(
        `create table if not exists ${partitionName(from)} partition of decisions for values from ('${new Date(from).toISOString()}') to ('${new Date(from + DAY_MS).toISOString()}')`,
      );
    } catch (err) {
      // IF NOT EXISTS is not race-safe: a replica creating the same day at once makes this one fail
      // on the name (42P07) or on the catalog's unique index (23505). Either way the partition exists.
      const code = (err as { code?: unknown }).code;
      if (code !== '42P07' && code !== '23505') throw err;
    }
  }
}

/** Drops every partition whose whole day ended `retentionMs` or more before `nowMs`; the names dropped. */
export async function dropExpiredPartitions(sql: Sql, nowMs: number, retentionMs: number): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i
      join pg_class c on c.oid = i.inhrelid
      join pg_class p on p.oid = i.inhparent
     where p.relname = 'decisions' and p.relnamespace = current_schema()::regnamespace`;
  const dropped: string[] = [];
  for (const { name } of rows) {
    const m = NAME.exec(name);
    if (m === null) continue; // not one of ours: left alone
    const end = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) + DAY_MS;
    if (end > nowMs - retentionMs) continue;
    await sql.unsafe(`drop table if exists ${name}`);
    dropped.push(name);
  }
  return dropped.sort();
}
