// Database faults on a PRIVATE server this file stops and starts: approvals survive a restart; with the
// server down every store method fails fast with StoreUnavailableError (bounded by the deadline, not
// a hang); once it is back the same store (same pools) works again, and waits resume.
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Sql } from 'postgres';
import { createApprovalWaiter } from '../../src/approvals/notify.js';
import type { ApprovalWaiter } from '../../src/approvals/notify.js';
import { createApprovalStore } from '../../src/approvals/store.js';
import type { ApprovalStore } from '../../src/approvals/store.js';
import { createSql } from '../../src/db/connect.js';
import { StoreUnavailableError } from '../../src/db/errors.js';
import { startPrivatePostgres } from '../helpers/db.js';
import type { PrivatePostgres } from '../helpers/db.js';
import { request } from './fixtures.js';

const DEADLINE_MS = 1_000;
let server: PrivatePostgres;
let sql: Sql;
let store: ApprovalStore;
let waiter: ApprovalWaiter;

beforeAll(async () => {
  server = await startPrivatePostgres();
  sql = createSql(server.url, { connectTimeoutMs: 2_000 });
  store = createApprovalStore(sql, { approvalTtlMs: 60 * 60_000, grantTtlMs: 60 * 60_000, deadlineMs: DEADLINE_MS });
  waiter = createApprovalWaiter(sql, store, { recheckMs: 100 });
});
afterAll(async () => {
  await waiter.close();
  await sql.end({ timeout: 1 });
  await server.dispose();
});

async function restart(): Promise<void> {
  await server.stop();
  await server.start();
}

test('approvals, their decisions and their events survive a server restart', async () => {
  const { approval } = await store.create(request({ sub: 'durable' }));
  await store.grant(approval.id, { sub: 'operator' }, 'ok');
  const before = await store.get(approval.id);
  const events = await store.events(approval.id);
  await restart();
  // The first call after a restart may meet a pooled connection the server closed: that call says
  // "unavailable", and the pool reconnects.
  const after = await retryUnavailable(() => store.get(approval.id));
  expect(after).toEqual(before);
  expect(await store.events(approval.id)).toEqual(events);
  expect((await store.consume(approval.id, { sub: 'durable' }, approval.hash)).ok).toBe(true);
});

test('server down: every method answers StoreUnavailableError, then the same store recovers', async () => {
  const { approval } = await store.create(request({ sub: 'faulty' }));
  await server.stop();
  try {
    const id = approval.id;
    const calls: [string, () => Promise<unknown>][] = [
      ['create', () => store.create(request({ sub: 'faulty-2' }))],
      ['get', () => store.get(id)],
      ['list', () => store.list({ limit: 10 })],
      ['grant', () => store.grant(id, { sub: 'operator' }, null)],
      ['deny', () => store.deny(id, { sub: 'operator' }, null)],
      ['consume', () => store.consume(id, { sub: 'faulty' }, approval.hash)],
      ['sweep', () => store.sweep()],
      ['events', () => store.events(id)],
      ['settled', () => store.settled([id])],
    ];
    for (const [name, call] of calls) {
      await expect(call(), name).rejects.toBeInstanceOf(StoreUnavailableError);
    }
    // A wait holds no connection and needs none: with the database gone it answers at its deadline
    // with the approval it was given (still pending, as far as anyone can tell), never hangs or throws.
    expect(await waiter.waitForChange(approval, 300, { caller: 'faulty' })).toBe(approval);
  } finally {
    await server.start();
  }
  const granted = await retryUnavailable(() => store.grant(approval.id, { sub: 'operator' }, null));
  expect(granted.ok).toBe(true);
  expect((await store.get(approval.id))?.status).toBe('granted');
});

test('a wait spanning a restart is woken by the decision: LISTEN comes back by itself', async () => {
  // No shared re-check within the test's reach: only the re-established LISTEN can answer. The
  // restart waits for the check of the newly awaited id (LISTEN is up by then).
  let firstCheck: () => void = () => {};
  const checked = new Promise<void>((resolve) => (firstCheck = resolve));
  const observed: Pick<ApprovalStore, 'get' | 'settled'> = {
    get: (id) => store.get(id),
    settled: async (ids) => {
      const settled = await store.settled(ids);
      firstCheck();
      return settled;
    },
  };
  const listening = createApprovalWaiter(sql, observed, { recheckMs: 600_000 });
  try {
    const { approval } = await store.create(request({ sub: 'waiting-through' }));
    // A long wait: a restart of the server on a busy machine can take many seconds, and LISTEN
    // reconnects after it (the test is that it does, not how fast).
    const waiting = listening.waitForChange(approval, 50_000, { caller: 'waiting-through' });
    await checked;
    await restart();
    await decideElsewhere((decider) => decider.deny(approval.id, { sub: 'operator' }, 'no'));
    expect(await waiting).toMatchObject({ status: 'denied' });
  } finally {
    await listening.close();
  }
}, 60_000);

test('a waiter created while the server is down works once the server is back', async () => {
  await server.stop();
  const late = createApprovalWaiter(sql, store, { recheckMs: 600_000 });
  try {
    await server.start();
    const { approval } = await retryUnavailable(() => store.create(request({ sub: 'late-waiter' })));
    const waiting = late.waitForChange(approval, 20_000, { caller: 'late-waiter' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await decideElsewhere((decider) => decider.grant(approval.id, { sub: 'operator' }, null));
    expect(await waiting).toMatchObject({ status: 'granted' });
  } finally {
    await server.start();
    await late.close();
  }
});

/** A decision made through another pool (another replica) on the same server. */
async function decideElsewhere(fn: (store: ApprovalStore) => Promise<{ ok: boolean }>): Promise<void> {
  const other = createSql(server.url);
  try {
    const decider = createApprovalStore(other, { approvalTtlMs: 60_000, grantTtlMs: 60_000, deadlineMs: 5_000 });
    expect((await fn(decider)).ok).toBe(true);
  } finally {
    await other.end();
  }
}

/** Retries while the store reports unavailable (a pool meeting connections closed by the restart). */
async function retryUnavailable<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || attempt >= 5) throw error;
    }
  }
}
