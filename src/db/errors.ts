// Which database failures mean "the store cannot answer right now" (503 + Retry-After) and which are
// bugs (500). Transport failures, server shutdowns, resource exhaustion, timeouts and lock or
// serialization conflicts are the first kind; everything else (a syntax error, a violated constraint,
// a type error) is a bug and is rethrown unchanged. Messages never carry SQL or values.

export type UnavailableReason = 'deadline' | 'connection' | 'server' | 'contention';

export class StoreUnavailableError extends Error {
  readonly reason: UnavailableReason;
  /** SQLSTATE or driver/socket code that caused it, when there is one (safe to log: no values). */
  readonly sourceCode: string | null;

  constructor(reason: UnavailableReason, sourceCode: string | null = null, options?: { cause?: unknown }) {
    super(`the approval store is unavailable (${reason})`, options);
    this.name = 'StoreUnavailableError';
    this.reason = reason;
    this.sourceCode = sourceCode;
  }
}

/**
 * A COMMIT was sent and whether it took effect could not be learned in time (src/db/outcome.ts): the
 * effect may exist. Never answered as 503, which promises that nothing committed.
 */
export class OutcomeUnknownError extends Error {
  constructor(options?: { cause?: unknown }) {
    super('the outcome of a commit could not be learned in time', options);
    this.name = 'OutcomeUnknownError';
  }
}

// postgres.js's own transport errors and Node socket/DNS errors: the server could not be reached or
// the connection broke.
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

// SQLSTATEs (https://www.postgresql.org/docs/current/errcodes-appendix.html) meaning the server cannot
// serve us now. Beyond the obvious set this includes session timeouts that end the connection
// (25P03, 57P05), a read-only server after a failover (25006), a misconfigured login (class 28,
// 3D000) and a prepared statement outdated by a migration (below): none is a bug of the request, and
// none may turn into an answer other than "try later".
const UNAVAILABLE_STATES: ReadonlySet<string> = new Set([
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '57P05', // idle_session_timeout
  '57014', // query_canceled (statement_timeout)
  '25P03', // idle_in_transaction_session_timeout
  '25006', // read_only_sql_transaction
  '3D000', // invalid_catalog_name (database missing)
]);
const UNAVAILABLE_CLASSES: ReadonlySet<string> = new Set([
  '08', // connection exception
  '53', // insufficient resources (too many connections, disk full, out of memory)
  '28', // invalid authorization (wrong password)
]);
const CONTENTION_STATES: ReadonlySet<string> = new Set([
  '55P03', // lock_not_available (lock_timeout)
  '40001', // serialization_failure
  '40P01', // deadlock_detected
]);

const SQLSTATE = /^[0-9A-Z]{5}$/;

// A prepared statement whose table changed under it (a migration run by a newer replica): "cached plan
// must not change result type". postgres.js drops the statement from its cache as it reports this,
// so the same call prepares it afresh next time: a transient, not a bug of ours.
function isStalePreparedStatement(code: string, error: unknown): boolean {
  return code === '0A000' && (error as { routine?: unknown }).routine === 'RevalidateCachedQuery';
}

/** The StoreUnavailableError this error stands for, or null when it is a bug. */
export function unavailableFrom(error: unknown): StoreUnavailableError | null {
  if (error instanceof StoreUnavailableError) return error;
  const code = errorCode(error);
  if (code === null) {
    // Node reports a failed connect to every address of a host as an AggregateError.
    if (error instanceof AggregateError) {
      for (const inner of error.errors) {
        const found = unavailableFrom(inner);
        if (found !== null) return new StoreUnavailableError(found.reason, found.sourceCode, { cause: error });
      }
    }
    return null;
  }
  if (CONNECTION_CODES.has(code)) return new StoreUnavailableError('connection', code, { cause: error });
  if (!SQLSTATE.test(code)) return null;
  if (CONTENTION_STATES.has(code)) return new StoreUnavailableError('contention', code, { cause: error });
  if (
    UNAVAILABLE_STATES.has(code) ||
    UNAVAILABLE_CLASSES.has(code.slice(0, 2)) ||
    isStalePreparedStatement(code, error)
  ) {
    return new StoreUnavailableError('server', code, { cause: error });
  }
  return null;
}

/** Maps a transient failure to StoreUnavailableError; returns anything else unchanged (a bug: 500). */
export function toStoreError(error: unknown): unknown {
  return unavailableFrom(error) ?? error;
}

function errorCode(error: unknown): string | null {
  if (typeof error !== 'object' || error === null || !('code' in error)) return null;
  const code: unknown = error.code;
  return typeof code === 'string' ? code : null;
}
