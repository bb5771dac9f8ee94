// Lanes (src/db/lanes.ts): one-statement transactions shared by the calls waiting at once, with
// withDeadline's promise (a call answered 503 never commits later), on a real PostgreSQL.
import type { Sql } from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { StoreUnavailableError } from '../../src/db/errors.js';
import { createLanes, IN_TRANSACTION, type Lanes } from '../../src/db/lanes.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

let db: TestDatabase;
let admin: Sql;
beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
  admin = createSql(db.url, { max: 2 });
  await admin`create table lane_rows (k text primary key, n int not null, xid text)`;
});
afterAll(async () => {
  await admin?.end({ timeout: 1 });
  await db?.drop();
});

/** Adds 1 to row k (guarded), returning its transaction's id. */
const bump = (k: string) => (c: Sql) =>
  c`
  insert into lane_rows as r (k, n, xid) select ${k}, 1, pg_current_xact_id()::text where ${c.unsafe(IN_TRANSACTION)}
  on conflict (k) do update set n = r.n + 1, xid = pg_current_xact_id()::text where ${c.unsafe(IN_TRANSACTION)}
  returning n, xid`;

async function rowOf(k: string): Promise<{ n: number; xid: string } | undefined> {
  const [row] = await admin<{ n: number; xid: string }[]>`select n, xid from lane_rows where k = ${k}`;
  return row;
}

describe('lanes', () => {
  it('the calls waiting when a lane comes free share its transaction: every one committed, in fewer transactions than calls', async () => {
    const lanes: Lanes = createLanes(db.url, 1);
    try {
      const rows = await Promise.all(
        Array.from({ length: 40 }, (_, i) => lanes.run(5_000, `k${i}`, bump(`batch-${i % 10}`))),
      );
      expect(rows.every((r) => r.length === 1)).toBe(true);
      for (let i = 0; i < 10; i++) expect((await rowOf(`batch-${i}`))?.n).toBe(4);
      const transactions = new Set(rows.map((r) => (r[0] as { xid: string }).xid));
      expect(transactions.size).toBeLessThan(40);
      expect(transactions.size).toBeGreaterThanOrEqual(2); // at most 32 calls per transaction
    } finally {
      await lanes.end();
    }
  });

  it('an abandoned call rolls its transaction back; the others of it go again and commit; the abandoned one never does', async () => {
    const lanes = createLanes(db.url, 1, { lockTimeoutMs: 10_000 });
    await admin`insert into lane_rows (k, n) values ('locked', 0)`;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const holding = new Promise<void>((resolve) => (locked = resolve));
    const tx = admin.begin(async (t) => {
      await t`select 1 from lane_rows where k = 'locked' for update`;
      locked();
      await held;
    });
    await holding;
    try {
      // The lane is busy a moment, so the next two calls wait together and share a transaction.
      const busy = lanes.run(5_000, 'a', (c) => c`select pg_sleep(0.2) where ${c.unsafe(IN_TRANSACTION)}`);
      const doomed = lanes.run(400, 'b', bump('locked'));
      const patient = lanes.run(10_000, 'c', bump('patient'));
      await busy;
      await expect(doomed).rejects.toBeInstanceOf(StoreUnavailableError);
      await new Promise((r) => setTimeout(r, 200));
      release();
      await tx;
      const [row] = await patient;
      expect(row).toMatchObject({ n: 1 });
      expect((await rowOf('locked'))?.n).toBe(0);
      expect((await rowOf('patient'))?.n).toBe(1);
    } finally {
      release();
      await lanes.end();
    }
  });

  it('a statement that fails fails its whole transaction: nothing of it commits', async () => {
    const lanes = createLanes(db.url, 1);
    try {
      const busy = lanes.run(5_000, 'a', (c) => c`select pg_sleep(0.1) where ${c.unsafe(IN_TRANSACTION)}`);
      const good = lanes.run(5_000, 'b', bump('with-a-bad-neighbour'));
      const bad = lanes.run(5_000, 'c', (c) => c`select 1 / 0 where ${c.unsafe(IN_TRANSACTION)}`);
      await busy;
      const [g, b] = await Promise.allSettled([good, bad]);
      expect(g.status).toBe('rejected');
      expect((b as PromiseRejectedResult).reason).toMatchObject({ code: '22012' }); // a bug, not unavailable: 500
      expect(await rowOf('with-a-bad-neighbour')).toBeUndefined();
      // The lane works on.
      expect((await lanes.run(5_000, 'd', bump('after')))[0]).toMatchObject({ n: 1 });
    } finally {
      await lanes.end();
    }
  });

  it('a call waiting for a lane past its deadline is never sent', async () => {
    const lanes = createLanes(db.url, 1);
    const busy = lanes.run(5_000, 'a', (c) => c`select pg_sleep(0.5) where ${c.unsafe(IN_TRANSACTION)}`);
    await expect(lanes.run(100, 'b', bump('too-late'))).rejects.toBeInstanceOf(StoreUnavailableError);
    await busy;
    await new Promise((r) => setTimeout(r, 100));
    expect(await rowOf('too-late')).toBeUndefined();
    await lanes.end();
  });

  it('runAlone: several statements commit together when accepted, and none of them when not', async () => {
    const lanes = createLanes(db.url, 2);
    try {
      const both = await lanes.runAlone(
        5_000,
        (c) => [bump('alone-a')(c), bump('alone-b')(c)],
        (rows) => rows.every((r) => r.length === 1),
      );
      expect(both.committed).toBe(true);
      expect(both.rows.map((r) => (r[0] as { n: number }).n)).toEqual([1, 1]);
      const refused = await lanes.runAlone(
        5_000,
        (c) => [bump('alone-a')(c), bump('alone-c')(c)],
        () => false,
      );
      expect(refused).toMatchObject({ committed: false });
      expect(refused.rows.map((r) => (r[0] as { n: number }).n)).toEqual([2, 1]); // as the statements saw it, then rolled back
      expect((await rowOf('alone-a'))?.n).toBe(1);
      expect(await rowOf('alone-c')).toBeUndefined();
    } finally {
      await lanes.end();
    }
  });

  /** The lanes' gather statement of these tests: each value a row of its own, in the transaction; 'bad' fails it. */
  const gather = (c: Sql, values: readonly string[]) =>
    values.includes('bad')
      ? c`select 1 / 0`
      : c`insert into lane_rows (k, n, xid) select v, 1, pg_current_xact_id()::text from json_array_elements_text(${JSON.stringify(values)}::text::json) v`;

  it("then: each call's value, given its rows, goes in one gather statement sent with COMMIT, or none", async () => {
    const lanes = createLanes(db.url, 1, {}, gather);
    try {
      const busy = lanes.run(5_000, 'a', (c) => c`select pg_sleep(0.1) where ${c.unsafe(IN_TRANSACTION)}`);
      const seen: unknown[][] = [];
      // Three calls in one transaction: two give a value, the other's rows say none.
      const [sent, skipped, also] = await Promise.all([
        lanes.run(5_000, 'b', bump('then-counted'), (rows) => {
          seen.push(rows);
          return 'then-follow';
        }),
        lanes.run(5_000, 'c', bump('then-other'), () => null),
        lanes.run(5_000, 'd', bump('then-third'), () => 'then-follow-2'),
        busy,
      ]);
      expect(seen).toEqual([sent]); // given its own rows, once
      const xid = (sent[0] as { xid: string }).xid;
      expect([skipped, also].map((r) => (r[0] as { xid: string }).xid)).toEqual([xid, xid]);
      for (const k of ['then-follow', 'then-follow-2']) expect(await rowOf(k)).toEqual({ n: 1, xid }); // in the same transaction
      // runAlone: a value only when accepted.
      const accepted = await lanes.runAlone(
        5_000,
        (c) => [bump('alone-then')(c)],
        () => true,
        () => 'alone-then-follow',
      );
      expect(accepted.committed).toBe(true);
      expect((await rowOf('alone-then-follow'))?.n).toBe(1);
      const refused = await lanes.runAlone(
        5_000,
        (c) => [bump('alone-then')(c)],
        () => false,
        () => 'alone-then-no',
      );
      expect(refused.committed).toBe(false);
      expect(await rowOf('alone-then-no')).toBeUndefined();
    } finally {
      await lanes.end();
    }
    // Lanes without a gather statement never ask for a value.
    const plain = createLanes(db.url, 1);
    try {
      let asked = false;
      await plain.run(5_000, 'a', bump('no-gather'), () => {
        asked = true;
        return 'never-written';
      });
      expect(asked).toBe(false);
      expect(await rowOf('never-written')).toBeUndefined();
    } finally {
      await plain.end();
    }
  });

  it('a gather statement that fails rolls back its whole transaction (COMMIT answers ROLLBACK): every call of it is answered the failure', async () => {
    const lanes = createLanes(db.url, 1, {}, gather);
    try {
      const busy = lanes.run(5_000, 'a', (c) => c`select pg_sleep(0.1) where ${c.unsafe(IN_TRANSACTION)}`);
      const good = lanes.run(5_000, 'b', bump('then-neighbour'));
      const bad = lanes.run(5_000, 'c', bump('then-bad'), () => 'bad');
      await busy;
      const [g, b] = await Promise.allSettled([good, bad]);
      expect((g as PromiseRejectedResult).reason).toMatchObject({ code: '22012' });
      expect((b as PromiseRejectedResult).reason).toMatchObject({ code: '22012' });
      expect(await rowOf('then-neighbour')).toBeUndefined();
      expect(await rowOf('then-bad')).toBeUndefined();
      expect((await lanes.run(5_000, 'd', bump('then-after')))[0]).toMatchObject({ n: 1 });
    } finally {
      await lanes.end();
    }
  });

  it('the guarded statement run on its own (outside the transaction BEGIN opens) changes nothing', async () => {
    const rows = await bump('outside')(admin);
    expect(rows).toHaveLength(0);
    expect(await rowOf('outside')).toBeUndefined();
  });
});
