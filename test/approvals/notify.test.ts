// waitForChange: woken by a decision made through ANOTHER pool (another replica) on the same database,
// answering at once when there is nothing to wait for, and returning the pending approval at timeout.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Sql } from 'postgres';
import { createApprovalWaiter } from '../../src/approvals/notify.js';
import type { ApprovalWaiter } from '../../src/approvals/notify.js';
import { createApprovalStore } from '../../src/approvals/store.js';
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
  // The fallback re-read is pushed out of reach, so only a NOTIFY can end these waits early.
  waiter = createApprovalWaiter(db.sql, store, { recheckMs: 60_000 });
});
afterAll(async () => {
  await waiter.close();
  await replicaSql.end();
  await db.drop();
});

let serial = 0;
const pending = async () => (await store.create(request({ sub: `waiter-${++serial}` }))).approval;

test('a grant through another pool wakes the waiter with the granted approval', async () => {
  const approval = await pending();
  const waiting = waiter.waitForChange(approval.id, 20_000);
  // Let the wait subscribe and read once before deciding (it would also be correct if it had not).
  await new Promise((resolve) => setTimeout(resolve, 50));
  const granted = await replica.grant(approval.id, { sub: 'operator' }, null);
  expect(granted.ok).toBe(true);
  expect(await waiting).toMatchObject({ id: approval.id, status: 'granted', decided_by: 'operator' });
});

test('several waits on one approval, and waits on others, each get their own answer', async () => {
  const a = await pending();
  const b = await pending();
  const waits = [waiter.waitForChange(a.id, 20_000), waiter.waitForChange(a.id, 20_000), waiter.waitForChange(b.id, 20_000)];
  await new Promise((resolve) => setTimeout(resolve, 50));
  await replica.deny(a.id, { sub: 'operator' }, 'no');
  await replica.grant(b.id, { sub: 'operator' }, null);
  const [a1, a2, b1] = await Promise.all(waits);
  expect([a1?.status, a2?.status, b1?.status]).toEqual(['denied', 'denied', 'granted']);
});

test('an approval that is not pending answers at once; a missing one is null', async () => {
  const approval = await pending();
  await replica.grant(approval.id, { sub: 'operator' }, null);
  expect(await waiter.waitForChange(approval.id, 20_000)).toMatchObject({ status: 'granted' });
  expect(await waiter.waitForChange('0190a0c0-0000-7000-8000-000000000000', 20_000)).toBeNull();
  expect(await waiter.waitForChange('not-a-uuid', 20_000)).toBeNull();
});

test('nothing happens: the pending approval comes back at the timeout', async () => {
  const approval = await pending();
  const result = await waiter.waitForChange(approval.id, 100);
  expect(result).toMatchObject({ id: approval.id, status: 'pending' });
});

test('expiry ends a wait too (the sweeper notifies)', async () => {
  const approval = await pending();
  const waiting = waiter.waitForChange(approval.id, 20_000);
  await new Promise((resolve) => setTimeout(resolve, 50));
  await replicaSql`update approvals set expires_at = now() - interval '1 second' where id = ${approval.id}`;
  await replica.sweep();
  expect(await waiting).toMatchObject({ status: 'expired' });
});

test('a change that sends no NOTIFY is still seen by the periodic re-read', async () => {
  const polling = createApprovalWaiter(replicaSql, replica, { recheckMs: 20 });
  try {
    const approval = await pending();
    const waiting = polling.waitForChange(approval.id, 20_000);
    // Decided with NOTIFY suppressed: a raw update no LISTEN sees.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await db.sql`update approvals set status = 'denied', decided_by = 'operator', decided_at = now() where id = ${approval.id}`;
    expect(await waiting).toMatchObject({ status: 'denied' });
  } finally {
    await polling.close();
  }
});

test('an aborted wait rejects with the abort reason', async () => {
  const approval = await pending();
  const controller = new AbortController();
  const waiting = waiter.waitForChange(approval.id, 20_000, controller.signal);
  controller.abort(new Error('client went away'));
  await expect(waiting).rejects.toThrow('client went away');
});
