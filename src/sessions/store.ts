// The operator sessions (migrations/0011_operator_sessions.sql): a person signed in to the page
// through the identity provider. The cookie's secret is made here and handed out once; the row is
// keyed by its SHA-256. Expiry is decided by the database clock, as for approvals; every call runs
// under withDeadline (a busy pool or a dead server is StoreUnavailableError, 503).
import { createHash, randomBytes } from 'node:crypto';
import type { Sql, TransactionSql } from 'postgres';
import { withDeadline } from '../db/deadline.js';
import { StoreUnavailableError } from '../db/errors.js';

/** A session as the service uses it: who signed in, and the CSRF token their page sends back. */
export interface OperatorSession {
  readonly sub: string;
  readonly team: string | null;
  readonly agent: string | null;
  readonly roles: readonly string[];
  /** The display name the ID token gave (src/policy/claims.ts displayName); null when none. */
  readonly name: string | null;
  readonly csrfToken: string;
  /** The provider's ID token, for the id_token_hint of RP-initiated logout; null when none was kept. */
  readonly idToken: string | null;
  /** ISO 8601, UTC. */
  readonly expiresAt: string;
}

export interface NewSession {
  readonly sub: string;
  readonly team: string | null;
  readonly agent: string | null;
  readonly roles: readonly string[];
  readonly name: string | null;
  readonly idToken: string | null;
}

export interface SessionStore {
  /** A new session; `replacing`, the browser's previous session secret, is ended in the same transaction. */
  create(input: NewSession, replacing?: string): Promise<{ secret: string; session: OperatorSession }>;
  /** The live session of this secret; null when unknown, ended or expired. */
  find(secret: string): Promise<OperatorSession | null>;
  /** Ends the session of this secret; what was ended, or null when there was none (or it had expired). */
  end(secret: string): Promise<OperatorSession | null>;
}

export interface SessionStoreOptions {
  /** SESSION_TTL, ms: a session ends this long after sign-in, used or not. */
  readonly ttlMs: number;
  readonly deadlineMs: number;
  /** Whether the migrations have been applied (src/service.ts); until then every call is 503. */
  readonly schemaReady?: () => boolean;
}

/** A cookie secret as made here: 32 random bytes, base64url. Anything else is never looked up. */
export const SESSION_SECRET_FORMAT = /^[A-Za-z0-9_-]{43}$/;

/** The longest ID token kept (the table's bound); a longer one is dropped, and logout goes without the hint. */
const MAX_ID_TOKEN = 16_384;

interface SessionRow {
  sub: string;
  team: string | null;
  agent: string | null;
  roles: string[];
  name: string | null;
  csrf_token: string;
  id_token: string | null;
  expires_at: Date;
}

const keyOf = (secret: string): string => `sha256:${createHash('sha256').update(secret).digest('hex')}`;
const random = (): string => randomBytes(32).toString('base64url');

function toSession(row: SessionRow): OperatorSession {
  return Object.freeze({
    sub: row.sub,
    team: row.team,
    agent: row.agent,
    roles: Object.freeze([...row.roles]),
    name: row.name ?? null,
    csrfToken: row.csrf_token,
    idToken: row.id_token,
    expiresAt: row.expires_at.toISOString(),
  });
}

export function createSessionStore(sql: Sql, options: SessionStoreOptions): SessionStore {
  if (!Number.isSafeInteger(options.ttlMs) || options.ttlMs <= 0)
    throw new RangeError('ttlMs must be a positive integer');
  const ttl = `${options.ttlMs} milliseconds`;
  const schemaReady = options.schemaReady ?? (() => true);
  const run = <T>(fn: (tx: TransactionSql) => Promise<T>): Promise<T> => {
    if (!schemaReady()) return Promise.reject(new StoreUnavailableError('connection'));
    return withDeadline(sql, options.deadlineMs, fn);
  };
  const columns = sql`sub, team, agent, roles, name, csrf_token, id_token, expires_at`;

  return {
    create(input, replacing) {
      const secret = random();
      const idToken = input.idToken !== null && input.idToken.length <= MAX_ID_TOKEN ? input.idToken : null;
      return run(async (tx) => {
        // Housekeeping, bounded by the sign-ins since the last one: nothing reads an expired row.
        await tx`delete from operator_sessions where expires_at <= now()`;
        if (replacing !== undefined && SESSION_SECRET_FORMAT.test(replacing))
          await tx`delete from operator_sessions where id = ${keyOf(replacing)}`;
        const [row] = await tx<SessionRow[]>`
          insert into operator_sessions (id, sub, team, agent, roles, name, csrf_token, id_token, expires_at)
          values (${keyOf(secret)}, ${input.sub}, ${input.team}, ${input.agent}, ${tx.json([...input.roles])}, ${input.name},
                  ${random()}, ${idToken},
                  now() + ${ttl}::interval)
          returning ${columns}`;
        return { secret, session: toSession(row!) };
      });
    },
    find(secret) {
      if (!SESSION_SECRET_FORMAT.test(secret)) return Promise.resolve(null);
      return run(async (tx) => {
        const [row] = await tx<
          SessionRow[]
        >`select ${columns} from operator_sessions where id = ${keyOf(secret)} and expires_at > now()`;
        return row === undefined ? null : toSession(row);
      });
    },
    end(secret) {
      if (!SESSION_SECRET_FORMAT.test(secret)) return Promise.resolve(null);
      return run(async (tx) => {
        const [row] = await tx<
          SessionRow[]
        >`delete from operator_sessions where id = ${keyOf(secret)} returning ${columns}, expires_at > now() as live`;
        return row === undefined || !(row as SessionRow & { live: boolean }).live ? null : toSession(row);
      });
    },
  };
}
