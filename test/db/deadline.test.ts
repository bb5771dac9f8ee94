// withDeadline: a call that answered "unavailable" never commits later, whether it timed out while
// waiting for a pooled connection or while its transaction was running.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Sql } from 'postgres';
import { createSql } from '../../src/db/connect.js';
import { withDeadline } from '../../src/db/deadline.js';
import { StoreUnavailableError } from '../../src/db/errors.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
// One connection: everything on it runs in order, so "the next query has finished" means every
// transaction queued before it (committed or rolled back) has finished too.
let single: Sql;

beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  await db.sql`create table counter (id int primary key, n int not null)`;
  await db.sql`insert into counter values (1, 0)`;
  single = createSql(db.url, { max: 1 });
});
afterAll(async () => {
  await single.end();
  await db.drop();
});

/** Resolves once `n` statements `select pg_sleep(<seconds>)` are running on the server. */
async function sleeping(seconds: number, n: number): Promise<void> {
  const text = `select pg_sleep(${seconds})`;
  for (;;) {
    const [row] = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from pg_stat_activity where query = ${text} and state = 'active'`;
    if ((row?.n ?? 0) >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function count(): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`select n from counter where id = 1`;
  return row?.n ?? -1;
}

test('returns the transaction’s value (arrays intact) and commits', async () => {
  const before = await count();
  const value = await withDeadline(single, 5_000, async (tx) => {
    await tx`update counter set n = n + 1 where id = 1`;
    return [1, 2, 3];
  });
  expect(value).toEqual([1, 2, 3]);
  expect(await count()).toBe(before + 1);
});

test('an error inside rolls back; a bug is rethrown as is, a transient failure becomes StoreUnavailableError', async () => {
  const before = await count();
  const bug = withDeadline(single, 5_000, async (tx) => {
    await tx`update counter set n = n + 1 where id = 1`;
    await tx`select * from no_such_table`;
  });
  await expect(bug).rejects.toMatchObject({ code: '42P01' });
  const timeout = withDeadline(single, 5_000, async (tx) => {
    await tx`update counter set n = n + 1 where id = 1`;
    await tx`set local statement_timeout = '10ms'`;
    await tx`select pg_sleep(5)`;
  });
  await expect(timeout).rejects.toMatchObject({ name: 'StoreUnavailableError', sourceCode: '57014' });
  expect(await count()).toBe(before);
});

test('abandoned while waiting for a connection: rejected at the deadline, never runs, never commits', async () => {
  const before = await count();
  const blocker = single`select pg_sleep(0.5)`.execute(); // holds the only connection
  await sleeping(0.5, 1);
  let ran = false;
  const call = withDeadline(single, 50, async (tx) => {
    ran = true;
    await tx`update counter set n = n + 1 where id = 1`;
  });
  await expect(call).rejects.toBeInstanceOf(StoreUnavailableError);
  await expect(call).rejects.toMatchObject({ reason: 'deadline' });
  await blocker;
  await single`select 1`; // queued behind the abandoned transaction
  expect(ran).toBe(false);
  expect(await count()).toBe(before);
});

test('abandoned while running (blocked on a row lock): the work happens, then rolls back', async () => {
  const before = await count();
  let release = (): void => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let locked = (): void => {};
  const holding = new Promise<void>((resolve) => (locked = resolve));
  const holder = db.sql.begin(async (tx) => {
    await tx`select n from counter where id = 1 for update`;
    locked();
    await released;
  });
  await holding;

  let updated = false;
  const call = withDeadline(single, 100, async (tx) => {
    await tx`update counter set n = n + 1 where id = 1`; // waits for the holder's lock
    updated = true;
    return 'done';
  });
  await expect(call).rejects.toMatchObject({ name: 'StoreUnavailableError', reason: 'deadline' });
  release();
  await holder;
  await single`select 1`; // after the abandoned transaction's ROLLBACK on the same connection
  expect(updated).toBe(true);
  expect(await count()).toBe(before);
});

test('pool exhaustion: 20 calls past the deadline all fail, none commits once the pool frees', async () => {
  const pool = createSql(db.url, { max: 2 });
  try {
    const before = await count();
    const sleepers = [pool`select pg_sleep(0.6)`.execute(), pool`select pg_sleep(0.6)`.execute()];
    await sleeping(0.6, 2);
    const calls = Array.from({ length: 20 }, () =>
      withDeadline(pool, 50, (tx) => tx`update counter set n = n + 1 where id = 1`),
    );
    const results = await Promise.allSettled(calls);
    expect(results.every((r) => r.status === 'rejected' && r.reason instanceof StoreUnavailableError)).toBe(true);
    await Promise.all(sleepers);
    // Every queued transaction has now had its turn (two connections, FIFO): wait for all of them by
    // filling both connections once more behind them.
    await Promise.all([pool`select 1`, pool`select 1`]);
    await pool.end();
    expect(await count()).toBe(before);
  } finally {
    await pool.end();
  }
});
