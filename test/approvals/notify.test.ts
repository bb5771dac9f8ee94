// waitForChange: woken by a decision made through ANOTHER pool (another replica) on the same database,
// answering at once when there is nothing to wait for, returning the pending approval at timeout, and
// costing the database nothing per wait: one read per settled approval, one status query per interval
// for all waits together.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Sql } from 'postgres';
import { createApprovalWaiter, WaitLimitError } from '../../src/approvals/notify.js';
import type { ApprovalWaiter } from '../../src/approvals/notify.js';
import { createApprovalStore } from '../../src/approvals/store.js';
import type { Approval } from '../../src/approvals/approval.js';
import type { ApprovalStore } from '../../src/approvals/store.js';
import { createSql } from '../../src/db/connect.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { request } from './fixtures.js';

const TTL = { approvalTtlMs: 60 * 60_000, grantTtlMs: 60_000, deadlineMs: 10_000 };
let db: TestDatabase;
let replicaSql: Sql;
let store: ApprovalStore; // replica A: the waiting one
let replica: ApprovalStore; // replica B: a second pool, where operators decide
let waiter: ApprovalWaiter;

beforeAll(async () => {
  db = await createTestDatabase();
  replicaSql = createSql(db.url);
  store = createApprovalStore(db.sql, TTL);
  replica = createApprovalStore(replicaSql, TTL);
  // The shared re-check is pushed out of reach, so only a NOTIFY (or the check of a newly awaited id) ends these waits early.
  waiter = createApprovalWaiter(db.sql, store, { recheckMs: 60_000 });
});
afterAll(async () => {
  await waiter.close();
  await replicaSql.end();
  await db.drop();
});

let serial = 0;
const pending = async (): Promise<Approval> => (await store.create(request({ sub: `waiter-${++serial}` }))).approval;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const as = (caller: string) => ({ caller });

/** The store as the waiter sees it, counting its calls and the ids each status query asked about. */
function counted(base: ApprovalStore) {
  const calls = { get: [] as string[], settled: [] as number[] };
  const view: Pick<ApprovalStore, 'get' | 'settled'> = {
    get: (id) => {
      calls.get.push(id);
      return base.get(id);
    },
    settled: (ids) => {
      calls.settled.push(ids.length);
      return base.settled(ids);
    },
  };
  return { calls, view };
}

function thrown(fn: () => unknown): WaitLimitError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WaitLimitError);
    return err as WaitLimitError;
  }
  throw new Error('did not throw');
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await sleep(10);
  expect(condition()).toBe(true);
}

test('a grant through another pool wakes the waiter with the granted approval', async () => {
  const approval = await pending();
  const waiting = waiter.waitForChange(approval, 20_000, as('a'));
  await sleep(50);
  const granted = await replica.grant(approval.id, { sub: 'operator' }, null);
  expect(granted.ok).toBe(true);
  expect(await waiting).toMatchObject({ id: approval.id, status: 'granted', decided_by: 'operator' });
});

test('several waits on one approval, and waits on others, each get their own answer, one read per approval', async () => {
  const { calls, view } = counted(store);
  const local = createApprovalWaiter(db.sql, view, { recheckMs: 60_000 });
  try {
    const a = await pending();
    const b = await pending();
    const waits = [
      ...Array.from({ length: 6 }, () => local.waitForChange(a, 20_000, as('x'))),
      local.waitForChange(b, 20_000, as('y')),
    ];
    await sleep(50);
    await replica.deny(a.id, { sub: 'operator' }, 'no');
    await replica.grant(b.id, { sub: 'operator' }, null);
    const answers = await Promise.all(waits);
    expect(answers.map((w) => w?.status)).toEqual([...Array(6).fill('denied'), 'granted']);
    // Six waits on `a`: its arguments were read once, not six times.
    expect(calls.get.filter((id) => id === a.id)).toHaveLength(1);
    expect(calls.get.filter((id) => id === b.id)).toHaveLength(1);
  } finally {
    await local.close();
  }
});

test('an approval that is not pending answers at once, without reading anything', async () => {
  const { calls, view } = counted(store);
  const local = createApprovalWaiter(db.sql, view, { recheckMs: 60_000 });
  try {
    const approval = await pending();
    const granted = await replica.grant(approval.id, { sub: 'operator' }, null);
    if (!granted.ok) throw new Error('grant failed');
    expect(await local.waitForChange(granted.approval, 20_000, as('a'))).toBe(granted.approval);
    expect(calls).toEqual({ get: [], settled: [] });
  } finally {
    await local.close();
  }
});

test('nothing happens: the pending approval comes back at the timeout, without a read of it', async () => {
  const { calls, view } = counted(store);
  const local = createApprovalWaiter(db.sql, view, { recheckMs: 60_000 });
  try {
    const approval = await pending();
    expect(await local.waitForChange(approval, 100, as('a'))).toBe(approval);
    expect(calls.get).toEqual([]);
    expect(calls.settled).toEqual([1]); // the one check of a newly awaited id
  } finally {
    await local.close();
  }
});

test('expiry ends a wait too (the sweeper notifies)', async () => {
  const approval = await pending();
  const waiting = waiter.waitForChange(approval, 20_000, as('a'));
  await sleep(50);
  await replicaSql`update approvals set expires_at = now() - interval '1 second' where id = ${approval.id}`;
  await replica.sweep();
  expect(await waiting).toMatchObject({ status: 'expired' });
});

test('a change that sends no NOTIFY, and a silent expiry, are seen by the shared re-check', async () => {
  const polling = createApprovalWaiter(replicaSql, replica, { recheckMs: 20 });
  try {
    const denied = await pending();
    const lapsed = await pending();
    const waits = [polling.waitForChange(denied, 20_000, as('a')), polling.waitForChange(lapsed, 20_000, as('a'))];
    await sleep(50);
    // Decided with NOTIFY suppressed (a raw update no LISTEN sees), and expired with no sweep at all.
    await db.sql`update approvals set status = 'denied', decided_by = 'operator', decided_at = now() where id = ${denied.id}`;
    await db.sql`update approvals set expires_at = now() - interval '1 second' where id = ${lapsed.id}`;
    const [d, l] = await Promise.all(waits);
    expect(d).toMatchObject({ status: 'denied' });
    expect(l).toMatchObject({ status: 'expired' });
  } finally {
    await polling.close();
  }
});

test("a decision between the caller's read and the wait is seen at once, not an interval later", async () => {
  const approval = await pending();
  await replica.grant(approval.id, { sub: 'operator' }, null); // `approval` is now stale: it says pending
  expect(await waiter.waitForChange(approval, 20_000, as('a'))).toMatchObject({ status: 'granted' });
});

test('idle waits cost one status query per interval for all of them, and no read of any approval', async () => {
  const { calls, view } = counted(store);
  const local = createApprovalWaiter(db.sql, view, { recheckMs: 50, maxPerCaller: 1000, maxTotal: 1000 });
  try {
    const approvals = await Promise.all(Array.from({ length: 300 }, () => pending()));
    const waits = approvals.map((a, i) => local.waitForChange(a, 30_000, as(`c${i % 30}`)));
    await until(() => calls.settled.length >= 10);
    expect(local.size).toBe(300);
    expect(calls.get).toEqual([]);
    // The first query checks the newly awaited ids (registered in one turn: one statement); every
    // one after it is the interval's re-check of all 300 at once.
    expect(calls.settled[0]).toBe(300);
    expect(calls.settled.slice(1).every((n) => n === 300)).toBe(true);
    await local.close();
    expect((await Promise.all(waits)).map((w) => w?.status)).toEqual(Array(300).fill('pending'));
  } finally {
    await local.close();
  }
});

test('waits are capped per caller and per replica; a finished wait gives its place back', async () => {
  const local = createApprovalWaiter(db.sql, store, { recheckMs: 60_000, maxPerCaller: 2, maxTotal: 3 });
  try {
    const a = await pending();
    const controller = new AbortController();
    const first = local.waitForChange(a, 20_000, { caller: 'alice', signal: controller.signal });
    const second = local.waitForChange(a, 20_000, as('alice'));
    expect(thrown(() => local.waitForChange(a, 20_000, as('alice')))).toMatchObject({ scope: 'caller', limit: 2 });
    const third = local.waitForChange(a, 20_000, as('bob'));
    expect(thrown(() => local.waitForChange(a, 20_000, as('carol')))).toMatchObject({ scope: 'replica', limit: 3 });
    controller.abort(new Error('left'));
    await expect(first).rejects.toThrow('left');
    const again = local.waitForChange(a, 20_000, as('alice')); // alice's place came back
    expect(local.size).toBe(3);
    await local.close();
    await Promise.all([second, third, again]);
    expect(local.size).toBe(0);
  } finally {
    await local.close();
  }
});

test('an aborted wait rejects with the abort reason', async () => {
  const approval = await pending();
  const controller = new AbortController();
  const waiting = waiter.waitForChange(approval, 20_000, { caller: 'a', signal: controller.signal });
  controller.abort(new Error('client went away'));
  await expect(waiting).rejects.toThrow('client went away');
});

test('close answers every wait with the approval it holds', async () => {
  const local = createApprovalWaiter(db.sql, store, { recheckMs: 60_000 });
  const approval = await pending();
  const waiting = local.waitForChange(approval, 20_000, as('a'));
  await local.close();
  expect(await waiting).toBe(approval);
});
