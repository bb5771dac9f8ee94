// The live feed behind `GET /approvals/stream`: every change of an approval (filed, decided, expired,
// consumed, cancelled), on any replica, pushed to the operators' pages as it happens.
//
// - It listens on the channel every transition NOTIFYs (store.ts), over the LISTEN connection the
//   waits already hold (postgres.js keeps one per pool and shares it between listeners).
// - Notifications that arrive together are read together: one statement reads the summaries of
//   every id notified in the same event-loop turn (never the arguments), whatever the number of
//   subscribers; each subscriber is then given what it may see.
// - A notification can be lost while the LISTEN connection is down: when postgres.js has listened
//   again, and when a read fails, every subscriber is told to `reset` (read its list again). An
//   approval that lapses unswept sends nothing until the sweep writes it: a page keeps its own
//   clock on expires_at.
// - A subscription takes a place among the replica's held requests, shared with the waits
//   (notify.ts: MAX_WAITS_PER_CALLER per caller, MAX_WAITS in all).

import type { Sql } from 'postgres';
import type { ApprovalSummary } from './approval.js';
import type { Holds } from './notify.js';
import type { ApprovalStore } from './store.js';
import { APPROVALS_CHANNEL, CREATED_PREFIX } from './store.js';

export type FeedEvent = { type: 'approval'; approval: ApprovalSummary } | { type: 'reset' };

export interface FeedSubscription {
  /** The subscriber's `sub`: its subscriptions are counted, and without seesAll it sees only its own. */
  caller: string;
  /** Approvers see every approval; others their own, as in lists. */
  seesAll: boolean;
  onEvent(event: FeedEvent): void;
}

export interface ApprovalFeed {
  /**
   * `listening` resolves when the feed is listening (false when the database could not be reached).
   * Throws WaitLimitError at once when the caller or the replica holds too many requests.
   */
  subscribe(subscription: FeedSubscription): { listening: Promise<boolean>; unsubscribe(): void };
  /** Subscriptions held now. */
  readonly size: number;
  close(): Promise<void>;
}

export function createApprovalFeed(sql: Sql, store: Pick<ApprovalStore, 'summaries'>, holds: Holds): ApprovalFeed {
  const subscribers = new Set<FeedSubscription>();
  // Ids notified since the last read: read together, one statement per event-loop turn.
  const due = new Set<string>();
  let closed = false;

  const broadcast = (event: FeedEvent): void => {
    for (const s of [...subscribers]) {
      if (event.type === 'approval' && !s.seesAll && event.approval.requester.sub !== s.caller) continue;
      try {
        s.onEvent(event);
      } catch {
        // A subscriber's failure (its connection went away) is its own: the others still hear.
      }
    }
  };
  const readDue = (): void => {
    const ids = [...due];
    due.clear();
    store.summaries(ids).then(
      (found) => {
        for (const approval of found) broadcast({ type: 'approval', approval });
      },
      () => broadcast({ type: 'reset' }), // the changes could not be read: read the lists again
    );
  };
  const notified = (payload: string): void => {
    if (subscribers.size === 0 || closed) return;
    if (due.size === 0) setImmediate(readDue);
    due.add((payload.startsWith(CREATED_PREFIX) ? payload.slice(CREATED_PREFIX.length) : payload).toLowerCase());
  };

  // Listening starts with the first subscriber. postgres.js runs the onlisten callback after every
  // (re)listen: the first time nothing can have been missed, afterwards anything may have been.
  let listening: Promise<{ unlisten(): Promise<void> } | null> | null = null;
  let listened = false;
  const listen = (): Promise<boolean> => {
    listening ??= sql
      .listen(APPROVALS_CHANNEL, notified, () => {
        if (listened) broadcast({ type: 'reset' });
        listened = true;
      })
      .then(
        (meta) => meta,
        () => {
          listening = null; // unreachable database: the next subscriber tries again
          return null;
        },
      );
    return listening.then((meta) => meta !== null);
  };

  return {
    subscribe(subscription) {
      const release = holds.take(subscription.caller, 'streams');
      // A copy: the same object subscribed twice is two subscriptions.
      const entry: FeedSubscription = { ...subscription };
      subscribers.add(entry);
      let active = true;
      return {
        listening: closed ? Promise.resolve(false) : listen(),
        unsubscribe() {
          if (!active) return;
          active = false;
          subscribers.delete(entry);
          release();
        },
      };
    },
    get size() {
      return subscribers.size;
    },
    async close() {
      closed = true;
      subscribers.clear();
      const meta = await listening;
      await meta?.unlisten().catch(() => {});
    },
  };
}
