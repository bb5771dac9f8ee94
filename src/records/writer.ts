// The decision store's writer (DECISION_STORE=postgres, docs/operations.md "Decision records"): off
// the hot path. /decide only serializes the log line's fields onto a bounded in-memory queue; a loop
// writes them in batches, one multi-row INSERT each, on a small pool of its own, so the store never
// waits for or holds a connection the approvals need. A full queue drops the record and counts it:
// a stalled database slows no decision, and what it cost is in /metrics. Partitions are kept by
// the same loop (partitions.ts). close() writes what is queued, bounded by the caller's grace.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Sql } from 'postgres';
import { unavailableFrom } from '../db/errors.js';
import { dayOf, dropExpiredPartitions, ensurePartitions } from './partitions.js';
import type { DecisionLine } from '../policy/record.js';
import { rowJsonOf } from './rows.js';

export type DropReason = 'queue_full' | 'rejected' | 'shutdown';

export interface DecisionWriterOptions {
  /** DECISION_QUEUE_MAX: records waiting at most; more are dropped. */
  queueMax: number;
  /** DECISION_RETENTION, ms. */
  retentionMs: number;
  /** Rows per INSERT. Default 500. */
  batchMax?: number;
  /** How long records gather before a write. Default 50 ms. */
  lingerMs?: number;
  /** The wait after a failed write before the next try. Default 1000 ms. */
  retryMs?: number;
  log: Logger;
  /** Called for records dropped: the queue was full, or the database refused their batch. */
  onDrop?: (reason: DropReason, count: number) => void;
  /** Called for records written. */
  onWritten?: (count: number) => void;
  /** The clock, ms since the epoch with a fraction (tests). */
  now?: () => number;
}

export interface DecisionWriter {
  /** Queues one decision's record, serialized (the hot path: never waits). */
  push(line: DecisionLine): void;
  /** Records waiting to be written. */
  readonly queued: number;
  /** Writes what is queued now (tests, shutdown); resolves when the queue was empty once or a write failed. */
  flush(): Promise<void>;
  /** Stops taking records, writes those queued, stops the loop. */
  close(): Promise<void>;
}

export function createDecisionWriter(sql: Sql, options: DecisionWriterOptions): DecisionWriter {
  const { queueMax, retentionMs, log } = options;
  const batchMax = options.batchMax ?? 500;
  const lingerMs = options.lingerMs ?? 50;
  const retryMs = options.retryMs ?? 1000;
  // performance.now() carries microseconds: records of the same millisecond keep the order they were decided in.
  const now = options.now ?? (() => performance.timeOrigin + performance.now());
  const onDrop = options.onDrop ?? (() => {});
  const onWritten = options.onWritten ?? (() => {});
  let queue: string[] = []; // each record's row as JSON (rows.ts)
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | null = null;
  let closed = false;
  let maintainedDay = Number.NaN;

  const maintain = async (): Promise<void> => {
    const at = now();
    if (dayOf(at) === maintainedDay) return;
    await ensurePartitions(sql, at);
    const dropped = await dropExpiredPartitions(sql, at, retentionMs);
    if (dropped.length > 0)
      log.info({ partitions: dropped }, 'decision records: dropped partitions past DECISION_RETENTION');
    maintainedDay = dayOf(at);
  };

  /** One multi-row INSERT; a record written twice (a retry after a lost answer) is written once. */
  const insert = (rows: string[]) => sql`
    insert into decisions (id, decided_at, tool, user_sub, team, agent, roles, env, run_id, decision, rule, kind,
                           policies, approval_id, replayed, args, claims, context, run, stage)
    select id, 'epoch'::timestamptz + decided_us * interval '1 microsecond', tool, user_sub, team, agent, roles, env, run_id,
           decision, rule, kind, policies, approval_id, replayed, args, claims, context, run, stage
      from json_to_recordset(${`[${rows.join(',')}]`}::text::json) as r(id uuid, decided_us bigint, tool text, user_sub text,
           team text, agent text, roles json, env text, run_id text, decision text, rule text, kind text,
           policies json, approval_id text, replayed boolean, args json, claims json, context json, run json, stage text)
    on conflict do nothing`;

  /** Writes batches until the queue is empty; false when a write failed (the rest waits for the retry). */
  const drain = async (): Promise<boolean> => {
    try {
      await maintain();
    } catch (err) {
      log.error({ err }, 'decision records: the partitions could not be kept; retrying');
      return false;
    }
    let alone = 0; // rows of a refused batch still to write one by one
    while (queue.length > 0) {
      const batch = queue.slice(0, alone > 0 ? 1 : batchMax);
      try {
        await insert(batch);
        queue.splice(0, batch.length);
        onWritten(batch.length);
      } catch (err) {
        if (unavailableFrom(err) !== null) {
          // Unreachable, slow or contended: the batch stays queued for the retry, and the queue's
          // bound drops what comes meanwhile.
          log.warn({ err }, 'decision records: the database did not take a batch; retrying');
          return false;
        }
        if (batch.length > 1) {
          // Refused for one of its rows (a check, a day outside every partition): each row alone,
          // so only the refused ones are lost.
          alone = batch.length;
          log.warn(
            { err, count: batch.length },
            'decision records: the database refused a batch; writing its rows one by one',
          );
          continue;
        }
        // Writing it again would refuse it again.
        queue.splice(0, 1);
        onDrop('rejected', 1);
        log.error({ err }, 'decision records: the database refused a record; dropped');
      }
      if (alone > 0) alone--;
    }
    return true;
  };

  const run = (): Promise<void> => {
    timer = undefined;
    writing ??= drain()
      .then((ok) => {
        writing = null;
        if (!ok && !closed) schedule(retryMs);
        else if (queue.length > 0 && !closed) schedule(lingerMs);
      })
      .catch((err: unknown) => {
        writing = null;
        log.error({ err }, 'decision records: the writer failed');
      });
    return writing;
  };
  const schedule = (ms: number): void => {
    if (timer !== undefined) return;
    timer = setTimeout(() => void run(), ms);
    timer.unref();
  };
  // Days pass without traffic too: the partitions ahead are made, and the old ones dropped, hourly.
  const maintenance = setInterval(() => {
    if (writing === null) void run();
  }, 3_600_000);
  maintenance.unref();
  void run();

  return {
    push(fields) {
      if (closed || queue.length >= queueMax) {
        onDrop('queue_full', 1);
        return;
      }
      let row: string;
      try {
        row = rowJsonOf(now(), fields);
      } catch (err) {
        // Fields JSON cannot carry (a bug upstream): the decision stands, its record is dropped.
        onDrop('rejected', 1);
        log.error({ err }, 'decision records: a record could not be serialized; dropped');
        return;
      }
      queue.push(row);
      if (writing === null) schedule(lingerMs);
    },
    get queued() {
      return queue.length;
    },
    async flush() {
      clearTimeout(timer);
      timer = undefined;
      if (writing !== null) await writing;
      await run();
    },
    async close() {
      closed = true;
      clearInterval(maintenance);
      clearTimeout(timer);
      timer = undefined;
      if (writing !== null) await writing;
      await drain();
      if (queue.length > 0) {
        onDrop('shutdown', queue.length);
        log.error({ count: queue.length }, 'decision records: not written before the shutdown; dropped');
        queue = [];
      }
    },
  };
}
