// The webhook outbox (migrations/0009): every read and write of its rows.
//
// - enqueue() runs inside an approval transition's transaction (src/approvals/store.ts): an event is
//   stored exactly when its transition commits, and never when it rolls back.
// - claim() takes due rows with FOR UPDATE SKIP LOCKED and, in the same statement, moves each one's
//   next_attempt_at past the attempt (a lease): a row being delivered is invisible to every other
//   worker, on any replica, without holding a transaction open during the HTTP call. A worker that
//   dies mid-attempt leaves the row to be claimed again when the lease runs out: delivered at least
//   once.
// - Every time is the database clock's.
import type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';
import type { ApprovalSummary, Grant } from '../approvals/approval.js';
import { uuidv7 } from '../kernel/uuid.js';
import { withDeadline } from '../db/deadline.js';
import { eventTypeOf, type OutboxEvent, type WebhookEventData, type WebhookEventType } from './events.js';

/** The NOTIFY channel: sent when events are queued, so workers deliver at once instead of at their next poll. */
export const WEBHOOKS_CHANNEL = 'gatehouse_webhooks';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'delivered', 'failed'];

/** Where a transition's events go: the endpoints (by name) and the types each takes. */
export interface OutboxTargets {
  readonly endpoints: readonly { readonly name: string; readonly events: readonly WebhookEventType[] | null }[];
  /** The approval's link on the page (events.ts approvalLink). */
  link(approvalId: string): string;
}

/**
 * The approval store's onTransition for these targets (src/approvals/store.ts): each transition's
 * events queued in its transaction; none without endpoints.
 */
export function queueEventsOf(targets: OutboxTargets): {
  onTransition?: (tx: TransactionSql, moved: readonly ApprovalSummary[], grant?: Grant) => Promise<void>;
} {
  return targets.endpoints.length === 0
    ? {}
    : { onTransition: (tx, moved, grant) => enqueue(tx, targets, moved, grant) };
}

/**
 * Queues one event per approval that moved (its summary as it now stands) and endpoint that takes
 * that type, in `tx`: the transition's own transaction. With `grant`: a grant short of the quorum
 * (approval.partially_granted), which moved no status.
 */
export async function enqueue(
  tx: TransactionSql,
  targets: OutboxTargets,
  moved: readonly ApprovalSummary[],
  grant?: Grant,
): Promise<void> {
  const rows: { id: string; endpoint: string; type: WebhookEventType; approval_id: string; data: string }[] = [];
  for (const summary of moved) {
    const type = grant !== undefined ? 'approval.partially_granted' : eventTypeOf(summary.status);
    const data: WebhookEventData = {
      ...summary,
      url: targets.link(summary.id),
      ...(grant !== undefined ? { grant: { by: grant.by, name: grant.name, at: grant.at, note: grant.note } } : {}),
    };
    const text = JSON.stringify(data);
    for (const endpoint of targets.endpoints) {
      if (endpoint.events !== null && !endpoint.events.includes(type)) continue;
      rows.push({ id: uuidv7(), endpoint: endpoint.name, type, approval_id: summary.id, data: text });
    }
  }
  if (rows.length === 0) return;
  // The notification reaches every replica's LISTEN connection at COMMIT, never on rollback.
  await tx`
    with queued as (insert into webhook_outbox ${tx(rows, 'id', 'endpoint', 'type', 'approval_id', 'data')} returning 1)
    select pg_notify(${WEBHOOKS_CHANNEL}, count(*)::text) from queued`;
}

/** A claimed row: the event and how many attempts it has had, this one included. */
export interface ClaimedDelivery extends OutboxEvent {
  readonly endpoint: string;
  readonly approvalId: string;
  readonly attempts: number;
}

/** A delivery as admins see it (GET /admin/webhooks). */
export interface DeliveryView {
  id: string;
  endpoint: string;
  type: WebhookEventType;
  approval_id: string;
  status: DeliveryStatus;
  attempts: number;
  created_at: string;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: string | null;
}

export interface DeliveryPage {
  items: DeliveryView[];
  nextCursor: string | null;
}

/** Rows per status (pending and failed) and endpoint: the metrics and the admin view. */
export interface OutboxCount {
  endpoint: string;
  status: 'pending' | 'failed';
  count: number;
}

interface OutboxRow {
  id: string;
  endpoint: string;
  type: WebhookEventType;
  approval_id: string;
  data: string;
  created_at: Date;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: Date;
  last_attempt_at: Date | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: Date | null;
}

// Endpoint names hold no comma (config.ts), so a list of them travels as one text parameter
// (postgres.js sends array parameters only when it knows the array type, which the pool does not fetch).
const nameList = (tx: TransactionSql, names: readonly string[]): PendingQuery<Row[]> =>
  tx`string_to_array(${names.join(',')}, ',')`;
const ms = (n: number): string => `${Math.max(0, Math.round(n))} milliseconds`;

export function createOutbox(sql: Sql, options: { deadlineMs: number }) {
  const run = <T>(fn: (tx: TransactionSql) => Promise<T>): Promise<T> => withDeadline(sql, options.deadlineMs, fn);

  /** Up to `limit` due rows of these endpoints, each leased for `leaseMs`, oldest due first. */
  function claim(names: readonly string[], limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    if (names.length === 0) return Promise.resolve([]);
    return run(async (tx) => {
      // The update finds the locked rows by primary key (as the approval store's expiry does).
      const rows = await tx<OutboxRow[]>`
        with due as (
          select id from webhook_outbox
           where status = 'pending' and next_attempt_at <= now() and endpoint = any(${nameList(tx, names)})
           order by next_attempt_at
           limit ${limit}
           for update skip locked
        )
        update webhook_outbox
           set attempts = attempts + 1, next_attempt_at = now() + ${ms(leaseMs)}::interval, last_attempt_at = now()
         where id = any(array(select id from due))
        returning id, endpoint, type, approval_id, data, created_at, attempts`;
      return rows.map((r) => ({
        id: r.id,
        endpoint: r.endpoint,
        type: r.type,
        approvalId: r.approval_id,
        data: r.data,
        createdAt: r.created_at,
        attempts: r.attempts,
      }));
    });
  }

  /** The receiver answered 2xx. */
  async function delivered(id: string, status: number): Promise<void> {
    await run(
      (tx) => tx`
        update webhook_outbox set status = 'delivered', delivered_at = now(), last_status = ${status}, last_error = null
         where id = ${id} and status = 'pending'`,
    );
  }

  /**
   * The attempt failed: the next one after `delayMs`, but never later than the end of the retry
   * window; an attempt at or past that end marks the row failed. Returns the row's status, or null
   * when it was no longer pending (another worker, whose lease outlived ours, settled it).
   */
  function attemptFailed(
    id: string,
    outcome: { status: number | null; error: string; delayMs: number; retryForMs: number },
  ): Promise<'pending' | 'failed' | null> {
    return run(async (tx) => {
      const window = tx`created_at + ${ms(outcome.retryForMs)}::interval`;
      const [row] = await tx<{ status: 'pending' | 'failed' }[]>`
        update webhook_outbox
           set status = case when now() >= ${window} then 'failed' else 'pending' end,
               next_attempt_at = least(now() + ${ms(outcome.delayMs)}::interval, ${window}),
               last_status = ${outcome.status}, last_error = ${outcome.error.slice(0, 500)}
         where id = ${id} and status = 'pending'
        returning status`;
      return row?.status ?? null;
    });
  }

  /**
   * Housekeeping: rows for an endpoint no longer configured here fail once their retry window is
   * over (another replica may still know it until then); delivered rows older than keepDeliveredMs
   * and failed ones older than keepFailedMs are deleted. Returns how many failed and were deleted.
   */
  function housekeep(o: {
    names: readonly string[];
    retryForMs: number;
    keepDeliveredMs: number;
    keepFailedMs: number;
  }): Promise<{
    failed: OutboxCount[];
    deleted: number;
  }> {
    return run(async (tx) => {
      const failed = await tx<{ endpoint: string; count: number }[]>`
        with gone as (
          update webhook_outbox set status = 'failed', last_error = 'no endpoint of this name is configured'
           where status = 'pending' and not (endpoint = any(${nameList(tx, o.names)}))
             and created_at + ${ms(o.retryForMs)}::interval <= now()
          returning endpoint
        )
        select endpoint, count(*)::int as count from gone group by endpoint`;
      const deleted = await tx`
        delete from webhook_outbox
         where (status = 'delivered' and delivered_at < now() - ${ms(o.keepDeliveredMs)}::interval)
            or (status = 'failed' and created_at < now() - ${ms(o.keepFailedMs)}::interval)
        returning 1`;
      return {
        failed: failed.map((f) => ({ endpoint: f.endpoint, status: 'failed' as const, count: f.count })),
        deleted: deleted.length,
      };
    });
  }

  /** Pending and failed rows, per endpoint. */
  function counts(): Promise<OutboxCount[]> {
    return run(async (tx) => {
      const rows = await tx<OutboxCount[]>`
        select endpoint, status, count(*)::int as count from webhook_outbox
         where status in ('pending', 'failed') group by endpoint, status order by endpoint, status`;
      return rows.map((r) => ({ endpoint: r.endpoint, status: r.status, count: r.count }));
    });
  }

  /** Rows of one status, newest first; `cursor` is the last id of the previous page. */
  function list(q: { status: DeliveryStatus; limit: number; cursor?: string }): Promise<DeliveryPage> {
    return run(async (tx) => {
      const before = q.cursor === undefined ? tx`` : tx`and id < ${q.cursor}::uuid`;
      // A literal status, never a parameter: the planner must see it to use the partial indexes.
      const status =
        q.status === 'failed'
          ? tx`status = 'failed'`
          : q.status === 'pending'
            ? tx`status = 'pending'`
            : tx`status = 'delivered'`;
      const rows = await tx<OutboxRow[]>`
        select id, endpoint, type, approval_id, status, attempts, created_at, next_attempt_at, last_attempt_at,
               last_status, last_error, delivered_at
          from webhook_outbox where ${status} ${before}
         order by id desc limit ${q.limit + 1}`;
      const page = rows.slice(0, q.limit);
      return { items: page.map(toView), nextCursor: rows.length > q.limit ? (page.at(-1)?.id ?? null) : null };
    });
  }

  return { claim, delivered, attemptFailed, housekeep, counts, list };
}

export type Outbox = ReturnType<typeof createOutbox>;

function toView(r: OutboxRow): DeliveryView {
  return {
    id: r.id,
    endpoint: r.endpoint,
    type: r.type,
    approval_id: r.approval_id,
    status: r.status,
    attempts: r.attempts,
    created_at: r.created_at.toISOString(),
    next_attempt_at: r.status === 'pending' ? r.next_attempt_at.toISOString() : null,
    last_attempt_at: r.last_attempt_at?.toISOString() ?? null,
    last_status: r.last_status,
    last_error: r.last_error,
    delivered_at: r.delivered_at?.toISOString() ?? null,
  };
}
