// The approval state machine against a real PostgreSQL: every state × every action, the races the
// single conditional statements must win exactly once, and expiry by the database clock.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { approvalHash } from '../../src/json/canonical.js';
import { ApprovalInputError, PendingLimitError } from '../../src/approvals/errors.js';
import { createApprovalStore } from '../../src/approvals/store.js';
import type { Approval, ApprovalStatus } from '../../src/approvals/approval.js';
import type { ApprovalStore } from '../../src/approvals/store.js';
import { createTestDatabase } from '../helpers/db.js';
import type { TestDatabase } from '../helpers/db.js';
import { request } from './fixtures.js';

const GRANT_TTL_MS = 10 * 60_000;
let db: TestDatabase;
let store: ApprovalStore;

beforeAll(async () => {
  db = await createTestDatabase({ max: 30 });
  store = createApprovalStore(db.sql, { approvalTtlMs: 60 * 60_000, grantTtlMs: GRANT_TTL_MS, deadlineMs: 10_000 });
});
afterAll(async () => {
  await db.drop();
});

let serial = 0;
/** A requester no other test uses, so rows never collide across tests. */
const newSub = (): string => `agent-${process.pid}-${++serial}`;
const OPERATOR = { sub: 'operator-1' };

/** Ages a row past its expiry by the database clock (no sleeping). */
async function age(id: string): Promise<void> {
  await db.sql`update approvals set expires_at = now() - interval '1 second' where id = ${id}`;
}
async function storedStatus(id: string): Promise<string | undefined> {
  const [row] = await db.sql<{ status: string }[]>`select status from approvals where id = ${id}`;
  return row?.status;
}
async function eventCount(id: string): Promise<number> {
  return (await store.events(id)).length;
}
function must<T>(value: T | null | undefined): T {
  if (value === null || value === undefined) throw new Error('expected a value');
  return value;
}

type State =
  | 'pending'
  | 'granted'
  | 'denied'
  | 'expired'
  | 'consumed'
  | 'cancelled'
  | 'pending-lapsed'
  | 'granted-lapsed';

async function inState(state: State): Promise<{ approval: Approval; sub: string }> {
  const sub = newSub();
  const input = request({ sub });
  const { approval } = await store.create(input);
  const id = approval.id;
  if (state === 'granted' || state === 'consumed' || state === 'granted-lapsed') {
    expect((await store.grant(id, OPERATOR, 'fine')).ok).toBe(true);
  }
  if (state === 'consumed') expect((await store.consume(id, { sub }, approval.hash)).ok).toBe(true);
  if (state === 'denied') expect((await store.deny(id, OPERATOR, 'no')).ok).toBe(true);
  if (state === 'cancelled') expect((await store.cancel(id, { sub })).ok).toBe(true);
  if (state === 'expired') {
    await age(id);
    expect(await store.sweep()).toBeGreaterThanOrEqual(1);
  }
  if (state === 'pending-lapsed' || state === 'granted-lapsed') await age(id);
  return { approval: must(await store.get(id)), sub };
}

type Action = 'grant' | 'grant_self' | 'deny' | 'consume' | 'cancel' | 'cancel_other' | 'create' | 'get';
// What the call answers, and the status the approval then shows.
type Outcome =
  | 'ok'
  | 'conflict'
  | 'self_approval'
  | 'refused' // consume: { ok: false, approval }
  | 'same' // create: returns the existing approval
  | 'new' // create: a new approval; the old one keeps `after`
  | 'read';
const cell = (outcome: Outcome, after: ApprovalStatus) => ({ outcome, after });

const TABLE: Record<State, Record<Action, { outcome: Outcome; after: ApprovalStatus }>> = {
  pending: {
    grant: cell('ok', 'granted'),
    grant_self: cell('self_approval', 'pending'),
    deny: cell('ok', 'denied'),
    consume: cell('refused', 'pending'),
    cancel: cell('ok', 'cancelled'),
    cancel_other: cell('read', 'pending'),
    create: cell('same', 'pending'),
    get: cell('read', 'pending'),
  },
  granted: {
    grant: cell('conflict', 'granted'),
    grant_self: cell('self_approval', 'granted'),
    deny: cell('conflict', 'granted'),
    consume: cell('ok', 'consumed'),
    cancel: cell('ok', 'cancelled'),
    cancel_other: cell('read', 'granted'),
    create: cell('same', 'granted'),
    get: cell('read', 'granted'),
  },
  denied: {
    grant: cell('conflict', 'denied'),
    grant_self: cell('self_approval', 'denied'),
    deny: cell('conflict', 'denied'),
    consume: cell('refused', 'denied'),
    cancel: cell('conflict', 'denied'),
    cancel_other: cell('read', 'denied'),
    create: cell('new', 'denied'),
    get: cell('read', 'denied'),
  },
  expired: {
    grant: cell('conflict', 'expired'),
    grant_self: cell('self_approval', 'expired'),
    deny: cell('conflict', 'expired'),
    consume: cell('refused', 'expired'),
    cancel: cell('conflict', 'expired'),
    cancel_other: cell('read', 'expired'),
    create: cell('new', 'expired'),
    get: cell('read', 'expired'),
  },
  consumed: {
    grant: cell('conflict', 'consumed'),
    grant_self: cell('self_approval', 'consumed'),
    deny: cell('conflict', 'consumed'),
    consume: cell('refused', 'consumed'),
    cancel: cell('conflict', 'consumed'),
    cancel_other: cell('read', 'consumed'),
    create: cell('new', 'consumed'),
    get: cell('read', 'consumed'),
  },
  cancelled: {
    grant: cell('conflict', 'cancelled'),
    grant_self: cell('self_approval', 'cancelled'),
    deny: cell('conflict', 'cancelled'),
    consume: cell('refused', 'cancelled'),
    cancel: cell('conflict', 'cancelled'),
    cancel_other: cell('read', 'cancelled'),
    create: cell('new', 'cancelled'),
    get: cell('read', 'cancelled'),
  },
  'pending-lapsed': {
    grant: cell('conflict', 'expired'),
    grant_self: cell('self_approval', 'expired'),
    deny: cell('conflict', 'expired'),
    consume: cell('refused', 'expired'),
    cancel: cell('conflict', 'expired'),
    cancel_other: cell('read', 'expired'),
    create: cell('new', 'expired'),
    get: cell('read', 'expired'),
  },
  'granted-lapsed': {
    grant: cell('conflict', 'expired'),
    grant_self: cell('self_approval', 'expired'),
    deny: cell('conflict', 'expired'),
    consume: cell('refused', 'expired'),
    cancel: cell('conflict', 'expired'),
    cancel_other: cell('read', 'expired'),
    create: cell('new', 'expired'),
    get: cell('read', 'expired'),
  },
};

const CELLS = Object.entries(TABLE).flatMap(([state, actions]) =>
  Object.entries(actions).map(([action, want]) => ({ state: state as State, action: action as Action, ...want })),
);

describe('state table', () => {
  test.each(CELLS)('$state × $action → $outcome, then $after', async ({ state, action, outcome, after }) => {
    const { approval, sub } = await inState(state);
    const id = approval.id;
    const eventsBefore = await eventCount(id);
    let got: Outcome;
    switch (action) {
      case 'grant':
      case 'grant_self':
      case 'deny': {
        const who = action === 'grant_self' ? { sub } : OPERATOR;
        const r = action === 'deny' ? await store.deny(id, who, 'no') : await store.grant(id, who, 'yes');
        got = r.ok ? 'ok' : r.error === 'not_found' ? 'read' : r.error;
        if (r.ok) expect(r.approval.status).toBe(after);
        if (!r.ok && r.error === 'conflict') expect(must(r.approval).status).toBe(after);
        break;
      }
      case 'cancel':
      case 'cancel_other': {
        // Someone else's approval does not exist for them: not_found, read as 'read'.
        const r = await store.cancel(id, action === 'cancel' ? { sub } : { sub: `${sub}-other` });
        got = r.ok ? 'ok' : r.error === 'not_found' ? 'read' : r.error;
        if (r.ok) expect(r.approval.status).toBe(after);
        if (!r.ok && r.error === 'conflict') expect(must(r.approval).status).toBe(after);
        break;
      }
      case 'consume': {
        const r = await store.consume(id, { sub }, approval.hash);
        got = r.ok ? 'ok' : 'refused';
        expect(must(r.approval).status).toBe(after);
        break;
      }
      case 'create': {
        const r = await store.create(request({ sub }));
        got = r.approval.id === id ? 'same' : 'new';
        expect(r.created).toBe(got === 'new');
        expect(r.approval.status).toBe(got === 'new' ? 'pending' : after);
        break;
      }
      case 'get':
        got = 'read';
        break;
    }
    expect(got).toBe(outcome);
    expect(must(await store.get(id)).status).toBe(after);

    // One event per successful transition; a lapsed row that a write touched is now stored as expired,
    // with one `system` event.
    const events = await store.events(id);
    const touchedLapsed = state.endsWith('-lapsed') && !['get', 'grant_self', 'cancel_other'].includes(action);
    expect(events.length - eventsBefore).toBe(outcome === 'ok' || touchedLapsed ? 1 : 0);
    if (touchedLapsed) {
      expect(await storedStatus(id)).toBe('expired');
      expect(events.at(-1)).toMatchObject({ actor: 'system', to_status: 'expired' });
    }
  });

  test('a missing or malformed id: not found everywhere, never an SQL error', async () => {
    for (const id of [randomUUID(), 'not-a-uuid', "'; drop table approvals; --", '']) {
      expect(await store.get(id)).toBeNull();
      expect(await store.grant(id, OPERATOR, null)).toEqual({ ok: false, error: 'not_found' });
      expect(await store.deny(id, OPERATOR, null)).toEqual({ ok: false, error: 'not_found' });
      expect(await store.consume(id, { sub: 'x' }, 'sha256:' + '0'.repeat(64))).toEqual({ ok: false, approval: null });
      expect(await store.cancel(id, { sub: 'x' })).toEqual({ ok: false, error: 'not_found' });
      expect(await store.events(id)).toEqual([]);
    }
  });
});

describe('create', () => {
  test('stores the request so it re-hashes to its hash (number lexemes kept)', async () => {
    const input = request({
      sub: newSub(),
      args: '{"amount":1.0,"big":12345678901234567890,"e":1e2,"s":"a&&b\\u0000"}',
    });
    const { approval, created } = await store.create(input);
    expect(created).toBe(true);
    const read = must(await store.get(approval.id));
    expect(read.hash).toBe(input.descriptor.hash);
    const { tool, args, kind, capability, presentation } = read;
    expect(approvalHash({ tool, args, kind, capability, presentation })).toBe(read.hash);
    expect(read).toMatchObject({
      status: 'pending',
      requester: input.requester,
      policies: input.policies,
      reason: input.descriptor.requirements[0]!.reason,
      rule: input.descriptor.requirements[0]!.rule,
      requirements: input.descriptor.requirements,
      decided_by: null,
      consumed_at: null,
    });
    expect(Date.parse(read.expires_at) - Date.parse(read.created_at)).toBe(60 * 60_000);
    expect(await store.events(approval.id)).toMatchObject([
      { actor: input.requester.sub, from_status: null, to_status: 'pending', note: null },
    ]);
  });

  test('20 concurrent identical creates → one row, one id, one creation event', async () => {
    const input = request({ sub: newSub() });
    const results = await Promise.all(Array.from({ length: 20 }, () => store.create(input)));
    const ids = new Set(results.map((r) => r.approval.id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const rows = await db.sql`select id from approvals where requester_sub = ${input.requester.sub}`;
    expect(rows).toHaveLength(1);
    expect(await eventCount(must(results[0]).approval.id)).toBe(1);
  });

  test('a lapsed live approval does not block: it is expired (once) and 20 concurrent creates make one new one', async () => {
    const sub = newSub();
    const old = (await store.create(request({ sub }))).approval;
    await age(old.id);
    const results = await Promise.all(Array.from({ length: 20 }, () => store.create(request({ sub }))));
    const ids = new Set(results.map((r) => r.approval.id));
    expect(ids.size).toBe(1);
    expect(ids.has(old.id)).toBe(false);
    expect(await storedStatus(old.id)).toBe('expired');
    const events = await store.events(old.id);
    expect(events.filter((e) => e.to_status === 'expired')).toEqual([
      expect.objectContaining({ actor: 'system', from_status: 'pending' }),
    ]);
  });

  test('the same request from another sub, or with another presentation, is another approval', async () => {
    const sub = newSub();
    const a = await store.create(request({ sub }));
    const b = await store.create(request({ sub: newSub() }));
    const c = await store.create(request({ sub, presentation: '{"summary":"something else"}' }));
    expect(new Set([a.approval.id, b.approval.id, c.approval.id]).size).toBe(3);
    expect([a.created, b.created, c.created]).toEqual([true, true, true]);
  });

  test('refuses a descriptor whose hash is not the request’s, and text PostgreSQL cannot hold', async () => {
    const input = request({ sub: newSub() });
    await expect(
      store.create({ ...input, descriptor: { ...input.descriptor, hash: 'sha256:' + '1'.repeat(64) } }),
    ).rejects.toThrow(/hash does not match/);
    await expect(store.create({ ...input, requester: { ...input.requester, sub: 'a\u0000b' } })).rejects.toBeInstanceOf(
      ApprovalInputError,
    );
    const longReason = { ...input.descriptor.requirements[0]!, reason: 'x'.repeat(2001) };
    await expect(
      store.create({ ...input, descriptor: { ...input.descriptor, requirements: [longReason] } }),
    ).rejects.toBeInstanceOf(ApprovalInputError);
    const { approval } = await store.create(input);
    await expect(store.grant(approval.id, OPERATOR, 'n'.repeat(2001))).rejects.toBeInstanceOf(ApprovalInputError);
    expect(await storedStatus(approval.id)).toBe('pending');
  });
});

describe('the pending cap per requester (MAX_PENDING_APPROVALS)', () => {
  const capped = (): ApprovalStore =>
    createApprovalStore(db.sql, {
      approvalTtlMs: 60 * 60_000,
      grantTtlMs: GRANT_TTL_MS,
      deadlineMs: 10_000,
      maxPendingPerRequester: 3,
    });
  const nth = (sub: string, n: number) => request({ sub, args: `{"order":"A${n}","amount":120.50}` });

  test('the cap+1st distinct request is refused; a re-request of a pending one still returns it', async () => {
    const s = capped();
    const sub = newSub();
    const made = [];
    for (let n = 1; n <= 3; n++) made.push((await s.create(nth(sub, n))).approval);
    await expect(s.create(nth(sub, 4))).rejects.toBeInstanceOf(PendingLimitError);
    await expect(s.create(nth(sub, 4))).rejects.toThrow('the requester already has 3 pending approvals');
    const again = await s.create(nth(sub, 2));
    expect(again).toEqual({ approval: made[1], created: false });
    const [row] = await db.sql<{ n: number }[]>`select count(*)::int as n from approvals where requester_sub = ${sub}`;
    expect(row?.n).toBe(3); // nothing half-written by the refusals
  });

  test('a decision or an expiry frees a place; granted approvals do not count; others are not affected', async () => {
    const s = capped();
    const sub = newSub();
    const made = [];
    for (let n = 1; n <= 3; n++) made.push((await s.create(nth(sub, n))).approval);
    expect((await s.create(nth(newSub(), 1))).created).toBe(true); // another requester
    expect((await s.deny(must(made[0]).id, OPERATOR, 'no')).ok).toBe(true);
    expect((await s.create(nth(sub, 4))).created).toBe(true);
    await expect(s.create(nth(sub, 5))).rejects.toBeInstanceOf(PendingLimitError);
    expect((await s.grant(must(made[1]).id, OPERATOR, null)).ok).toBe(true);
    expect((await s.create(nth(sub, 5))).created).toBe(true);
    await age(must(made[2]).id); // lapsed: no longer pending by the database clock, even before a sweep
    expect((await s.create(nth(sub, 6))).created).toBe(true);
    await expect(s.create(nth(sub, 7))).rejects.toBeInstanceOf(PendingLimitError);
  });

  test('the cap defaults to 100 and must be a positive integer', async () => {
    const sub = newSub();
    for (let n = 1; n <= 100; n++) await store.create(nth(sub, n));
    await expect(store.create(nth(sub, 101))).rejects.toThrow('the requester already has 100 pending approvals');
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() =>
        createApprovalStore(db.sql, {
          approvalTtlMs: 1000,
          grantTtlMs: 1000,
          deadlineMs: 1000,
          maxPendingPerRequester: bad,
        }),
      ).toThrow(RangeError);
    }
  });
});

describe('grant and deny', () => {
  test('a grant records who, when and the note, and restarts the clock at GRANT_TTL', async () => {
    const { approval } = await inState('pending');
    const r = await store.grant(approval.id, OPERATOR, 'looks right');
    if (!r.ok) throw new Error('grant failed');
    expect(r.approval).toMatchObject({ status: 'granted', decided_by: 'operator-1', decision_note: 'looks right' });
    expect(Date.parse(r.approval.expires_at) - Date.parse(must(r.approval.decided_at))).toBe(GRANT_TTL_MS);
    expect((await store.events(approval.id)).at(-1)).toMatchObject({
      actor: 'operator-1',
      from_status: 'pending',
      to_status: 'granted',
      note: 'looks right',
    });
  });

  test('20 concurrent grants and denies by different operators → exactly one winner, one decision event', async () => {
    const { approval } = await inState('pending');
    const calls = Array.from({ length: 20 }, (_, i) =>
      i % 2 === 0
        ? store.grant(approval.id, { sub: `op-${i}` }, null)
        : store.deny(approval.id, { sub: `op-${i}` }, 'no'),
    );
    const results = await Promise.all(calls);
    const winners = results.filter((r) => r.ok);
    expect(winners).toHaveLength(1);
    const winner = must(winners[0]).approval;
    for (const r of results) {
      if (r.ok) continue;
      expect(r.error).toBe('conflict');
      expect(must(r.approval)).toMatchObject({ status: winner.status, decided_by: winner.decided_by });
    }
    expect(must(await store.get(approval.id))).toMatchObject({ status: winner.status, decided_by: winner.decided_by });
    const decisions = (await store.events(approval.id)).filter((e) => e.from_status === 'pending');
    expect(decisions).toHaveLength(1);
  });

  test('the requester can never decide its own approval, also when racing other operators', async () => {
    const { approval, sub } = await inState('pending');
    const calls = Array.from({ length: 20 }, (_, i) =>
      i % 2 === 0 ? store.grant(approval.id, { sub }, null) : store.deny(approval.id, { sub: `op-${i}` }, null),
    );
    const results = await Promise.all(calls);
    results.forEach((r, i) => {
      if (i % 2 === 0) expect(r).toEqual({ ok: false, error: 'self_approval' });
    });
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    const final = must(await store.get(approval.id));
    expect(final.status).toBe('denied');
    expect(final.decided_by).not.toBe(sub);
  });
});

describe('consume', () => {
  test('20 concurrent consumes of one grant → exactly one succeeds, one event', async () => {
    const { approval, sub } = await inState('granted');
    const results = await Promise.all(
      Array.from({ length: 20 }, () => store.consume(approval.id, { sub }, approval.hash)),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    for (const r of results) expect(must(r.approval).status).toBe('consumed');
    const consumed = (await store.events(approval.id)).filter((e) => e.to_status === 'consumed');
    expect(consumed).toEqual([expect.objectContaining({ actor: sub, from_status: 'granted' })]);
  });

  test('another hash is not consumed (the grant stays usable for the request it was for)', async () => {
    const { approval, sub } = await inState('granted');
    const other = request({ sub, args: '{"order":"A1","amount":120.5}' }).descriptor.hash; // 120.5 ≠ 120.50
    expect(other).not.toBe(approval.hash);
    const r = await store.consume(approval.id, { sub }, other);
    expect(r.ok).toBe(false);
    expect(must(r.approval).status).toBe('granted');
    expect((await store.consume(approval.id, { sub }, approval.hash)).ok).toBe(true);
  });

  test('a malformed hash is a mismatch, never an SQL error', async () => {
    const { approval, sub } = await inState('granted');
    for (const hash of ['', 'sha256:', approval.hash.toUpperCase(), approval.hash + '\u0000', 'md5:abc']) {
      const r = await store.consume(approval.id, { sub }, hash);
      expect(r).toMatchObject({ ok: false, approval: { status: 'granted' } });
    }
  });

  test('another requester cannot consume it, and is not told it exists', async () => {
    const { approval } = await inState('granted');
    expect(await store.consume(approval.id, { sub: newSub() }, approval.hash)).toEqual({ ok: false, approval: null });
    expect(await storedStatus(approval.id)).toBe('granted');
  });
});

describe('expiry by the database clock', () => {
  test('a pending approval past expires_at reads as expired at once; sweep() writes it with a system event', async () => {
    const { approval } = await inState('pending');
    await age(approval.id);
    expect(must(await store.get(approval.id)).status).toBe('expired');
    expect(await storedStatus(approval.id)).toBe('pending'); // nothing written yet
    expect(await store.sweep()).toBeGreaterThanOrEqual(1);
    expect(await storedStatus(approval.id)).toBe('expired');
    expect((await store.events(approval.id)).at(-1)).toMatchObject({
      actor: 'system',
      from_status: 'pending',
      to_status: 'expired',
    });
    expect(await store.sweep()).toBe(0);
  });

  test('a grant past its GRANT_TTL cannot be consumed', async () => {
    const { approval, sub } = await inState('granted-lapsed');
    const r = await store.consume(approval.id, { sub }, approval.hash);
    expect(r).toMatchObject({ ok: false, approval: { status: 'expired' } });
    expect((await store.events(approval.id)).at(-1)).toMatchObject({ from_status: 'granted', to_status: 'expired' });
  });
});

describe('the schema is the backstop', () => {
  test('events are append-only; hashed columns are immutable; illegal transitions are refused', async () => {
    const { approval } = await inState('denied');
    await expect(db.sql`update approval_events set note = 'x' where approval_id = ${approval.id}`).rejects.toThrow(
      /append-only/,
    );
    await expect(db.sql`delete from approval_events where approval_id = ${approval.id}`).rejects.toThrow(/append-only/);
    await expect(db.sql`truncate approval_events cascade`).rejects.toThrow(/append-only/);
    await expect(db.sql`update approvals set presentation = '{}' where id = ${approval.id}`).rejects.toThrow(
      /immutable/,
    );
    await expect(db.sql`update approvals set status = 'granted' where id = ${approval.id}`).rejects.toThrow(
      /illegal transition/,
    );
    await expect(db.sql`update approvals set requester_sub = 'someone-else' where id = ${approval.id}`).rejects.toThrow(
      /immutable/,
    );
    await expect(db.sql`update approvals set run_id = 'another-run' where id = ${approval.id}`).rejects.toThrow(
      /immutable/,
    );
    await expect(db.sql`update approvals set context = '{"a":1}' where id = ${approval.id}`).rejects.toThrow(
      /immutable/,
    );
    await expect(db.sql`update approvals set args = args || '' where id = ${approval.id}`).resolves.toHaveLength(0); // same value
    for (const [from, to] of [
      ['granted', 'denied'],
      ['granted', 'pending'],
      ['consumed', 'expired'],
      ['expired', 'pending'],
      ['cancelled', 'pending'],
      ['cancelled', 'granted'],
      ['denied', 'cancelled'],
      ['consumed', 'cancelled'],
      ['expired', 'cancelled'],
    ] as const) {
      const { approval: row } = await inState(from);
      await expect(
        db.sql`update approvals set status = ${to} where id = ${row.id}`,
        `${from} -> ${to}`,
      ).rejects.toThrow(`approvals: illegal transition ${from} -> ${to}`);
    }
    // A decision is final: no rewriting who decided, when, or why, nor when it was consumed.
    for (const state of ['granted', 'denied', 'consumed'] as const) {
      const { approval: row } = await inState(state);
      for (const set of [
        db.sql`decided_by = 'someone-else'`,
        db.sql`decided_at = now() - interval '1 day'`,
        db.sql`decision_note = 'rewritten'`,
      ]) {
        await expect(db.sql`update approvals set ${set} where id = ${row.id}`, state).rejects.toThrow(
          `approvals: a decision is final (the row is ${state})`,
        );
      }
    }
    const { approval: consumedRow } = await inState('consumed');
    await expect(
      db.sql`update approvals set consumed_at = now() + interval '1 hour' where id = ${consumedRow.id}`,
    ).rejects.toThrow('a decision is final');
    const { approval: expiredRow } = await inState('expired');
    await expect(
      db.sql`update approvals set decided_by = 'op', decided_at = now() where id = ${expiredRow.id}`,
    ).rejects.toThrow('a decision is final');
    const { approval: pendingRow } = await inState('pending');
    await expect(
      db.sql`update approvals set status = 'consumed', consumed_at = now(), decided_by = 'op', decided_at = now() where id = ${pendingRow.id}`,
    ).rejects.toThrow('approvals: illegal transition pending -> consumed');
    const { approval: pending, sub } = await inState('pending');
    await expect(
      db.sql`update approvals set status = 'granted', decided_by = ${sub}, decided_at = now() where id = ${pending.id}`,
    ).rejects.toThrow(/approvals_not_self_decided/);
    await expect(db.sql`update approvals set status = 'granted' where id = ${pending.id}`).rejects.toThrow(
      /approvals_decided_fields/,
    );
  });

  test('every value rule holds for a hand-run write, each named by its domain', async () => {
    const { approval } = await inState('pending');
    // A copy of the approval under another hash (so no live row collides), with one column replaced.
    const columns = [
      'status',
      'hash',
      'kind',
      'tool',
      'args',
      'capability',
      'presentation',
      'reason',
      'rule',
      'requester_sub',
      'requester_team',
      'requester_agent',
      'policies',
      'expires_at',
    ];
    const copy = (column: string, value: string) => {
      const values = columns.map((c) => (c === column ? value : c === 'hash' ? `'sha256:' || repeat('e', 64)` : c));
      return db.sql.unsafe(
        `insert into approvals (id, ${columns.join(', ')}) select $1, ${values.join(', ')} from approvals where id = $2`,
        [randomUUID(), approval.id],
      );
    };
    await expect(copy('kind', `'another kind'`)).resolves.toHaveLength(0); // the copy itself is valid
    const refused: [string, string, RegExp][] = [
      ['status', `'approved'`, /approval_status_valid/],
      ['kind', `''`, /name_text_length/],
      ['tool', `repeat('t', 513)`, /name_text_length/],
      ['requester_team', `repeat('é', 513)`, /name_text_length/],
      ['reason', `repeat('r', 2001)`, /note_text_length/],
      ['args', `'[1]'`, /json_object_text_object/],
      ['presentation', `'"text"'`, /json_object_text_object/],
      ['policies', `'{}'::jsonb`, /policy_list_array/],
    ];
    for (const [column, value, rule] of refused) await expect(copy(column, value), column).rejects.toThrow(rule);
    await expect(
      db.sql`insert into approval_events (approval_id, actor, to_status) values (${approval.id}, '', 'pending')`,
    ).rejects.toThrow(/name_text_length/);
    await expect(
      db.sql`insert into approval_events (approval_id, actor, to_status) values (${approval.id}, 'x', 'gone')`,
    ).rejects.toThrow(/approval_status_valid/);
    await expect(
      db.sql`update approvals set status = 'denied', decided_by = 'operator-1', decided_at = now(), decision_note = ${'n'.repeat(2001)} where id = ${approval.id}`,
    ).rejects.toThrow(/note_text_length/);
    await expect(
      db.sql`update approvals set status = 'denied', decided_by = ${'o'.repeat(513)}, decided_at = now() where id = ${approval.id}`,
    ).rejects.toThrow(/name_text_length/);
    expect(await storedStatus(approval.id)).toBe('pending');
  });

  test('the schema as the migrations leave it: table checks tie columns together, domains hold single values, two guard triggers', async () => {
    // PostgreSQL evaluates every table CHECK on every UPDATE; a domain's only where its column is written.
    const rows = await db.sql<{ conname: string }[]>`
      select conname from pg_constraint where conrelid in ('approvals'::regclass, 'approval_events'::regclass) and contype = 'c'
       order by conname`;
    expect(rows.map((r) => r.conname)).toEqual([
      'approvals_amended',
      'approvals_consumed_at',
      'approvals_decided_fields',
      'approvals_message_on_denial',
      'approvals_not_self_decided',
      'approvals_pending_undecided',
    ]);
    // Each value rule lives in its column's type: a column changed back to text would lose it silently.
    const types = await db.sql<{ table: string; column: string; type: string }[]>`
      select c.relname as table, a.attname as column, format_type(a.atttypid, a.atttypmod) as type
        from pg_attribute a join pg_class c on c.oid = a.attrelid
       where c.relname in ('approvals', 'approval_events') and a.attnum > 0 and not a.attisdropped
       order by 1, 2`;
    expect(Object.fromEntries(types.map((t) => [`${t.table}.${t.column}`, t.type]))).toEqual({
      'approval_events.actor': 'name_text',
      'approval_events.approval_id': 'uuid',
      'approval_events.at': 'timestamp with time zone',
      'approval_events.from_status': 'approval_status',
      'approval_events.id': 'bigint',
      'approval_events.message': 'note_text',
      'approval_events.note': 'note_text',
      'approval_events.to_status': 'approval_status',
      'approvals.amended_args': 'json_object_text',
      'approvals.amended_at': 'timestamp with time zone',
      'approvals.amended_by': 'name_text',
      'approvals.amended_hash': 'sha256_text',
      'approvals.amended_requirements': 'json_array_text',
      'approvals.args': 'json_object_text',
      'approvals.capability': 'json_object_text',
      'approvals.consumed_at': 'timestamp with time zone',
      'approvals.context': 'json_object_text',
      'approvals.created_at': 'timestamp with time zone',
      'approvals.decided_at': 'timestamp with time zone',
      'approvals.decided_by': 'name_text',
      'approvals.decision_message': 'note_text',
      'approvals.decision_note': 'note_text',
      'approvals.expires_at': 'timestamp with time zone',
      'approvals.grant_round': 'integer',
      'approvals.hash': 'sha256_text',
      'approvals.id': 'uuid',
      'approvals.kind': 'name_text',
      'approvals.policies': 'policy_list',
      'approvals.presentation': 'json_object_text',
      'approvals.reason': 'note_text',
      'approvals.requester_agent': 'name_text',
      'approvals.requester_name': 'name_text',
      'approvals.requester_sub': 'name_text',
      'approvals.requester_team': 'name_text',
      'approvals.requirements': 'json_array_text',
      'approvals.result': 'json_text',
      'approvals.rule': 'name_text',
      'approvals.run_id': 'name_text',
      'approvals.status': 'approval_status',
      'approvals.tool': 'name_text',
    });
    // The guard's triggers fire on UPDATE OF their columns and would not see another BEFORE trigger
    // changing NEW: the set is exactly these (approvals_quorum, 0019, and approvals_amendment, 0021, only read NEW).
    const triggers = await db.sql<{ tgname: string }[]>`
      select tgname from pg_trigger where tgrelid = 'approvals'::regclass and not tgisinternal order by tgname`;
    expect(triggers.map((t) => t.tgname)).toEqual([
      'approvals_amendment',
      'approvals_immutable',
      'approvals_quorum',
      'approvals_transition',
    ]);
  });
});
