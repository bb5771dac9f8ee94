// A commit's outcome is never misreported: when COMMIT's answer is lost with its connection, or late
// at the deadline (a dark link), withDeadline and the lanes answer what PostgreSQL says happened —
// the value if it committed, 503 if it did not (and then it never commits), 504 (OutcomeUnknownError)
// when nothing can be learned — and they answer while the link is still dark. Real PostgreSQL behind
// a TCP proxy that injects the faults (test/helpers/pg-proxy.ts).
import type { Sql } from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { withDeadline } from '../../src/db/deadline.js';
import { OutcomeUnknownError, StoreUnavailableError } from '../../src/db/errors.js';
import { createLanes, IN_TRANSACTION, type Lanes } from '../../src/db/lanes.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { startPgProxy, type PgProxy } from '../helpers/pg-proxy.js';

let db: TestDatabase;
let proxy: PgProxy;
const opened: { end(options?: { timeout?: number }): Promise<void> }[] = [];

beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  await db.sql`create table outcome_rows (k text primary key)`;
  proxy = await startPgProxy(db.url);
});
afterEach(async () => {
  proxy.light();
  await Promise.all(opened.splice(0).map((s) => s.end({ timeout: 1 })));
});
afterAll(async () => {
  await proxy?.close();
  await db?.drop();
});

const exists = async (k: string): Promise<boolean> =>
  (await db.sql`select 1 from outcome_rows where k = ${k}`).length === 1;

/** Resolves once no session of the database holds an open transaction (a held COMMIT's session ended). */
async function noOpenTransaction(): Promise<void> {
  for (;;) {
    const [row] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where datname = current_database() and backend_xid is not null and pid <> pg_backend_pid()`;
    if (row?.n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function pool(): Sql {
  const sql = createSql(proxy.url, { max: 2 });
  opened.push(sql);
  return sql;
}

function lanes(): Lanes {
  const made = createLanes(proxy.url, 1);
  opened.push({ end: () => made.end() });
  return made;
}

const insert = (k: string) => (c: Sql) =>
  c`insert into outcome_rows (k) select ${k} where ${c.unsafe(IN_TRANSACTION)} returning k`;

describe('withDeadline', () => {
  it('COMMIT reached the server and its answer was lost: the value, since it committed (not 503)', async () => {
    const sql = pool();
    await sql`select 1`; // connected before the fault is armed
    proxy.arm('cut-after-commit');
    const value = await withDeadline(sql, 2_000, async (tx) => {
      await tx`insert into outcome_rows (k) values ('cut')`;
      return 'granted';
    });
    expect(value).toBe('granted');
    expect(await exists('cut')).toBe(true);
  });

  it('COMMIT held past the deadline while the database answers: the transaction is ended, 503, and it never commits', async () => {
    const sql = pool();
    await sql`select 1`;
    proxy.arm('hold-commit');
    const call = withDeadline(sql, 1_000, async (tx) => {
      await tx`insert into outcome_rows (k) values ('held')`;
      return 'granted';
    });
    await expect(call).rejects.toBeInstanceOf(StoreUnavailableError);
    proxy.light(); // the held COMMIT arrives now, on a session that was ended
    await noOpenTransaction();
    expect(await exists('held')).toBe(false);
  });

  it('the link goes dark with COMMIT at the server: 504 while still dark; it had committed', async () => {
    const sql = pool();
    await sql`select 1`;
    proxy.arm('dark-after-commit');
    const call = withDeadline(sql, 1_000, async (tx) => {
      await tx`insert into outcome_rows (k) values ('dark-after')`;
      return 'granted';
    });
    await expect(call).rejects.toBeInstanceOf(OutcomeUnknownError);
    proxy.light();
    expect(await exists('dark-after')).toBe(true);
  });

  it('the link goes dark with COMMIT held: 504 while still dark; the server refuses the late COMMIT', async () => {
    const sql = pool();
    await sql`select 1`;
    proxy.arm('dark-before-commit');
    const call = withDeadline(sql, 1_000, async (tx) => {
      await tx`insert into outcome_rows (k) values ('dark-before')`;
      return 'granted';
    });
    await expect(call).rejects.toBeInstanceOf(OutcomeUnknownError);
    // Past the server's deadline for the COMMIT (the transaction's idle limit), the link comes back.
    await noOpenTransaction();
    proxy.light();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await exists('dark-before')).toBe(false);
  });

  it('a transaction that wrote nothing keeps its answer when COMMIT’s answer is lost', async () => {
    const sql = pool();
    await sql`select 1`;
    proxy.arm('cut-after-commit');
    const value = await withDeadline(sql, 2_000, async (tx) => (await tx<{ n: number }[]>`select 41 + 1 as n`)[0]?.n);
    expect(value).toBe(42);
  });
});

describe('lanes', () => {
  it('COMMIT reached the server and its answer was lost: the rows, since it committed (not 503)', async () => {
    const l = lanes();
    await l.run(2_000, 'a', insert('lane-warm'));
    proxy.arm('cut-after-commit');
    const rows = await l.run(2_000, 'a', insert('lane-cut'));
    expect(rows).toEqual([{ k: 'lane-cut' }]);
    expect(await exists('lane-cut')).toBe(true);
  });

  it('COMMIT held past the deadline while the database answers: 503, and it never commits', async () => {
    const l = lanes();
    await l.run(2_000, 'a', insert('lane-warm-2'));
    proxy.arm('hold-commit');
    await expect(l.run(1_000, 'a', insert('lane-held'))).rejects.toBeInstanceOf(StoreUnavailableError);
    proxy.light();
    await noOpenTransaction();
    expect(await exists('lane-held')).toBe(false);
  });

  it('the link goes dark with COMMIT in flight: 504 while still dark, never a wait for the link', async () => {
    const l = lanes();
    await l.run(2_000, 'a', insert('lane-warm-3'));
    proxy.arm('dark-before-commit');
    await expect(l.run(1_000, 'a', insert('lane-dark'))).rejects.toBeInstanceOf(OutcomeUnknownError);
    await noOpenTransaction();
    proxy.light();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await exists('lane-dark')).toBe(false);
  });
});
