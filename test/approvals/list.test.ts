// Listing: newest first, filters, keyset pages that neither skip nor repeat, and a status filter that
// agrees with the expiry computed on read. A database of its own, so the whole table is known.
import { afterAll, beforeAll, expect, test, vi } from 'vitest';
import { ListQueryError } from '../../src/kernel/errors.js';
import { createApprovalStore } from '../../src/approvals/store.js';
import type { Approval } from '../../src/approvals/approval.js';
import type { ApprovalStore, ListQuery } from '../../src/approvals/store.js';
import { createSql } from '../../src/db/connect.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { request } from './fixtures.js';

let db: TestDatabase;
let store: ApprovalStore;
// In creation order.
const created: Approval[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  store = createApprovalStore(db.sql, { approvalTtlMs: 60 * 60_000, grantTtlMs: 60_000, deadlineMs: 10_000 });
  // 12 approvals: subs alice/bob alternate, tools refund/delete_user every third.
  for (let i = 0; i < 12; i++) {
    const input = request({
      sub: i % 2 === 0 ? 'alice' : 'bob',
      tool: i % 3 === 0 ? 'delete_user' : 'refund',
      args: `{"n":${i}}`,
    });
    created.push((await store.create(input)).approval);
  }
  const at = (i: number): string => created[i]?.id ?? '';
  await store.grant(at(1), { sub: 'op' }, null);
  await store.deny(at(2), { sub: 'op' }, 'no');
  await store.grant(at(3), { sub: 'op' }, null);
  // 4: pending past expiry (not swept), 5: granted past expiry (not swept).
  await store.grant(at(5), { sub: 'op' }, null);
  await db.sql`update approvals set expires_at = now() - interval '1 second' where id in (${at(4)}, ${at(5)})`;
});
afterAll(async () => {
  await db.drop();
});

/** All pages of a query, following nextCursor. */
async function allPages(query: Omit<ListQuery, 'cursor'>): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await store.list(cursor === undefined ? query : { ...query, cursor });
    pages++;
    ids.push(...page.items.map((a) => a.id));
    if (page.nextCursor === null) return { ids, pages };
    cursor = page.nextCursor;
  }
}

const newestFirst = (xs: Approval[]): string[] => [...xs].reverse().map((a) => a.id);
const idsAt = (...indexes: number[]): string[] => newestFirst(indexes.map((i) => created[i] as Approval));

test('newest first, keyset pages of 5 cover everything exactly once', async () => {
  const { ids, pages } = await allPages({ limit: 5 });
  expect(ids).toEqual(newestFirst(created));
  expect(pages).toBe(3);
  const single = await store.list({ limit: 200 });
  expect(single.items.map((a) => a.id)).toEqual(ids);
  expect(single.nextCursor).toBeNull();
});

test('a page exactly at the end has no next cursor', async () => {
  const page = await store.list({ limit: 12 });
  expect(page.items).toHaveLength(12);
  expect(page.nextCursor).toBeNull();
});

test('filters: requester, tool, and both', async () => {
  expect((await allPages({ limit: 2, requesterSub: 'alice' })).ids).toEqual(idsAt(0, 2, 4, 6, 8, 10));
  expect((await allPages({ limit: 2, tool: 'delete_user' })).ids).toEqual(idsAt(0, 3, 6, 9));
  expect((await allPages({ limit: 1, tool: 'delete_user', requesterSub: 'bob' })).ids).toEqual(idsAt(3, 9));
  expect((await store.list({ limit: 5, requesterSub: 'nobody' })).items).toEqual([]);
});

test('the status filter agrees with the expiry computed on read', async () => {
  expect((await allPages({ limit: 2, status: 'granted' })).ids).toEqual(idsAt(1, 3));
  expect((await allPages({ limit: 2, status: 'denied' })).ids).toEqual(idsAt(2));
  expect((await allPages({ limit: 2, status: 'expired' })).ids).toEqual(idsAt(4, 5));
  expect((await allPages({ limit: 2, status: 'pending' })).ids).toEqual(idsAt(0, 6, 7, 8, 9, 10, 11));
  expect((await allPages({ limit: 2, status: 'consumed' })).ids).toEqual([]);
  const expired = await store.list({ limit: 10, status: 'expired' });
  expect(expired.items.map((a) => a.status)).toEqual(['expired', 'expired']);
  // Everything listed shows the computed status.
  const all = await store.list({ limit: 200 });
  expect(all.items.find((a) => a.id === created[4]?.id)?.status).toBe('expired');
});

test('a malformed cursor or limit is a typed error (400), never an SQL error', async () => {
  const good = (await store.list({ limit: 3 })).nextCursor ?? '';
  const decoded = Buffer.from(good, 'base64url').toString('utf8');
  const bad = [
    'garbage',
    '',
    good + 'x',
    good.slice(1),
    Buffer.from('2026-13-01T00:00:00.000000Z ' + (created[0]?.id ?? ''), 'utf8').toString('base64url'),
    Buffer.from(decoded.replace(/ .*/, " ' or 1=1 --"), 'utf8').toString('base64url'),
    Buffer.from(decoded.replace('T', ' '), 'utf8').toString('base64url'),
  ];
  for (const cursor of bad) {
    await expect(store.list({ limit: 3, cursor }), cursor).rejects.toMatchObject({
      name: 'ListQueryError',
      code: 'invalid_cursor',
    });
  }
  for (const limit of [0, 201, 1.5, Number.NaN]) {
    await expect(store.list({ limit })).rejects.toBeInstanceOf(ListQueryError);
  }
  await expect(store.list({ limit: 3, tool: 'a\u0000b' })).rejects.toMatchObject({
    code: 'invalid_filter',
    field: 'tool',
  });
  await expect(store.list({ limit: 3, requesterSub: 'x'.repeat(513) })).rejects.toMatchObject({
    code: 'invalid_filter',
    field: 'requesterSub',
  });
  // @ts-expect-error: a status outside the union, as an unchecked caller might pass
  await expect(store.list({ limit: 3, status: 'nope' })).rejects.toMatchObject({
    code: 'invalid_status',
    field: 'status',
  });
  await expect(store.list({ limit: 0 })).rejects.toMatchObject({ code: 'invalid_limit', field: 'limit' });
  await expect(store.list({ limit: 3, cursor: 'garbage' })).rejects.toMatchObject({
    code: 'invalid_cursor',
    field: 'cursor',
  });
});

test('a cursor instant outside years 0001–9999 is refused before it reaches PostgreSQL', async () => {
  const id = created[0]?.id ?? '';
  const cursorAt = (at: string): string => Buffer.from(`${at} ${id}`, 'utf8').toString('base64url');
  // JS Date accepts year 0000 and round-trips it; PostgreSQL's timestamptz answers 22008.
  expect(new Date('0000-01-01T00:00:00.000Z').toISOString()).toBe('0000-01-01T00:00:00.000Z');
  await expect(store.list({ limit: 3, cursor: cursorAt('0000-01-01T00:00:00.000000Z') })).rejects.toMatchObject({
    code: 'invalid_cursor',
  });
  await expect(store.list({ limit: 3, cursor: cursorAt('0000-12-31T23:59:59.999999Z') })).rejects.toMatchObject({
    code: 'invalid_cursor',
  });
  // The ends of the range are real instants PostgreSQL holds: a page, not an error.
  expect((await store.list({ limit: 3, cursor: cursorAt('0001-01-01T00:00:00.000000Z') })).items).toEqual([]);
  expect((await store.list({ limit: 3, cursor: cursorAt('9999-12-31T23:59:59.999999Z') })).items).toHaveLength(3);
});

test('rows created in the same millisecond, or at the same instant, are each on exactly one page', async () => {
  // 40 approvals within one millisecond, 20 of them at the very same microsecond.
  const inserted = await db.sql<{ id: string }[]>`
    insert into approvals (id, status, hash, kind, tool, args, capability, presentation, reason, rule, requester_sub, policies,
                           created_at, expires_at)
    select gen_random_uuid(), 'pending', 'sha256:' || lpad(to_hex(g), 64, 'b'), 'k', 'refund', '{}', '{}', '{}', 'r', 'rule',
           'same-instant', '[]'::jsonb, date_trunc('milliseconds', now()) - interval '1 hour' + greatest(g - 20, 0) * interval '1 microsecond',
           now() + interval '1 day'
      from generate_series(1, 40) g
    returning id`;
  const want = inserted.map((r) => r.id).sort();
  for (const status of [undefined, 'pending'] as const) {
    const { ids, pages } = await allPages({
      requesterSub: 'same-instant',
      limit: 7,
      ...(status === undefined ? {} : { status }),
    });
    expect(pages, String(status)).toBe(6);
    expect([...ids].sort(), String(status)).toEqual(want);
  }
});

test('the pending and granted lists and the sweep read only the live rows, through the live index, never the history', async () => {
  // What waits for a human is older than what went by since: 2,000 pending approvals from two hours
  // ago, then a history of 20,000 consumed ones, and statistics that know both. Walking
  // approvals_listing newest first would read the whole history before the first pending row.
  await db.sql`
    insert into approvals (id, status, hash, kind, tool, args, capability, presentation, reason, rule, requester_sub, policies,
                           created_at, expires_at)
    select gen_random_uuid(), 'pending', 'sha256:' || lpad(to_hex(g), 64, 'a'), 'k', 'refund', '{}', '{}', '{}', 'r', 'rule',
           'queue-' || g, '[]'::jsonb, now() - interval '2 hours', now() + interval '1 day'
      from generate_series(1, 2000) g`;
  await db.sql`
    insert into approvals (id, status, hash, kind, tool, args, capability, presentation, reason, rule, requester_sub, policies,
                           created_at, expires_at, decided_by, decided_at, consumed_at)
    select gen_random_uuid(), 'consumed', 'sha256:' || lpad(to_hex(g), 64, '0'), 'k', 'refund', '{}', '{}', '{}', 'r', 'rule',
           'history-' || (g % 10), '[]'::jsonb, now() + g * interval '1 ms', now(), 'op', now(), now()
      from generate_series(1, 20000) g`;
  await db.sql`analyze approvals`;
  // One connection, so that the scans counted below are its own, flushed on demand.
  const one = createSql(db.url, { max: 1 });
  try {
    const counted = createApprovalStore(one, { approvalTtlMs: 60 * 60_000, grantTtlMs: 60_000, deadlineMs: 10_000 });
    const scans = async () => {
      await one`select pg_stat_clear_snapshot()`;
      const [row] = await one<{ live: number; listingRead: number; seq: number }[]>`
        select (select idx_scan from pg_stat_user_indexes where indexrelname = 'approvals_live_request')::int as live,
               (select idx_tup_read from pg_stat_user_indexes where indexrelname = 'approvals_listing')::int as "listingRead",
               (select seq_scan from pg_stat_user_tables where relname = 'approvals')::int as seq`;
      return row ?? { live: 0, listingRead: 0, seq: 0 };
    };
    const flushed = async () => {
      await one`select pg_stat_force_next_flush()`;
      let last = await scans();
      await vi.waitFor(
        async () => {
          const now = await scans();
          expect(now).toEqual(last); // settled: nothing more arrives
          last = now;
        },
        { interval: 100, timeout: 10_000 },
      );
      return last;
    };
    // Each round: two pages of pending, the granted list, a sweep; seven rounds, past the five custom
    // plans after which PostgreSQL may switch to a generic one. A newest-first walk through the
    // history to the first pending row would read all 20,000 of its entries in approvals_listing.
    for (let round = 0; round < 7; round++) {
      const before = await flushed();
      const page = await counted.list({ status: 'pending', limit: 50 });
      expect(page.items.map((a) => a.status)).toEqual(Array(50).fill('pending'));
      const next = await counted.list({ status: 'pending', limit: 50, cursor: page.nextCursor ?? undefined });
      expect(next.items).toHaveLength(50);
      expect((await counted.list({ status: 'granted', limit: 200 })).items.length).toBeGreaterThan(0);
      await counted.sweep();
      const after = await flushed();
      expect(after.seq, `round ${round}`).toBe(before.seq);
      expect(after.listingRead - before.listingRead, `round ${round}`).toBeLessThan(20_000);
      expect(after.live - before.live, `round ${round}`).toBeGreaterThanOrEqual(2);
    }
  } finally {
    await one.end();
  }
});
