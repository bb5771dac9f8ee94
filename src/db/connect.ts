// The one place a postgres.js pool is configured. Client-side limits bound connecting and idling;
// server-side session settings (sent in the startup packet, so they hold for every statement on
// every connection, including the LISTEN connection) bound what a statement, a lock wait and an
// abandoned transaction can cost the server. Waiting for a free pooled connection is bounded
// separately, per call, by withDeadline (deadline.ts).

import postgres from 'postgres';
import type { Sql } from 'postgres';

export interface SqlOptions {
  /** Pool size. Default 10. */
  max?: number;
  /** Opening a connection (TCP + TLS + auth). Default 5000 ms. */
  connectTimeoutMs?: number;
  /** Close a connection idle this long. Default 60 000 ms. */
  idleTimeoutMs?: number;
  /** Recycle connections after this long. Default 30 min. */
  maxLifetimeMs?: number;
  /** Server cancels a statement running longer (57014). Default 5000 ms. */
  statementTimeoutMs?: number;
  /** Server gives up waiting for a lock (55P03). Default 2000 ms. */
  lockTimeoutMs?: number;
  /** Server ends a session idle inside a transaction (a crashed or stuck client). Default 10 000 ms. */
  idleInTransactionTimeoutMs?: number;
  /** Shown in pg_stat_activity. Default 'gatehouse'. */
  applicationName?: string;
  /** Named prepared statements; turn off behind a transaction-mode pooler that lacks support. Default true. */
  prepare?: boolean;
  /** Cap on the jittered, growing wait before reconnecting after failures. Default 2000 ms. */
  reconnectBackoffMaxMs?: number;
}

export function createSql(url: string, options: SqlOptions = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    // postgres.js takes seconds.
    connect_timeout: (options.connectTimeoutMs ?? 5_000) / 1000,
    idle_timeout: (options.idleTimeoutMs ?? 60_000) / 1000,
    max_lifetime: (options.maxLifetimeMs ?? 30 * 60_000) / 1000,
    prepare: options.prepare ?? true,
    // No array-type lookup on connect: nothing here sends or reads SQL arrays, and postgres.js runs
    // that lookup with nobody awaiting it, so a connection cut right after opening (a restart, a
    // pg_terminate_backend) surfaced as an unhandled rejection, which ends a Node process.
    fetch_types: false,
    // postgres.js's own backoff grows to 20 s, during which a connection (the LISTEN one included)
    // stays down after the server is back; a short cap recovers within a couple of seconds.
    backoff: reconnectBackoff(options.reconnectBackoffMaxMs ?? 2_000),
    // Server NOTICEs (e.g. "relation already exists, skipping") are not ours to print.
    onnotice: () => {},
    connection: {
      application_name: options.applicationName ?? 'gatehouse',
      statement_timeout: options.statementTimeoutMs ?? 5_000,
      lock_timeout: options.lockTimeoutMs ?? 2_000,
      idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? 10_000,
    },
    // Deliberately no `transform` and no `types`: column names arrive exactly as the SQL names them
    // (snake_case, as the stores expect) and timestamptz arrives as a JS Date.
  });
}

/** Seconds to wait before reconnect attempt n (postgres.js counts consecutive failures): 50 ms doubling, capped, jittered. */
function reconnectBackoff(maxMs: number): (attempt: number) => number {
  return (attempt) => (Math.min(maxMs, 50 * 2 ** attempt) / 1000) * (0.5 + Math.random() / 2);
}
