// Idempotency-Key (docs/spec.md section 5.3): what became of a caller's keyed request, kept 24 hours,
// so that a retry after a lost answer is not acted on twice. A row refers to what was done (a grant
// consumed, an approval filed, a counted call allowed), not to the answer's text, which the route
// rebuilds after deciding the request again; only an answer that cannot be rebuilt keeps its text.
// The key's lock, the act and the row are one transaction (migrations/0008, 0015): a row is kept only
// for an act that committed. One caller (`sub`) keeps at most so many keys and bytes (429 beyond).
import type { Sql, TransactionSql } from 'postgres';
import { withDeadline } from './deadline.js';

export type IdempotentRoute = 'decide' | 'approvals' | 'usage' | 'inspect';

/** Who asks with which key, and the SHA-256 digests of the canonical body and of the caller's identity. */
export interface IdempotencyClaim {
  readonly sub: string;
  readonly route: IdempotentRoute;
  readonly key: string;
  readonly bodyHash: string;
  /** Every claim the request was decided on (src/http/idempotency.ts): only this identity is answered from the row. */
  readonly identityHash: string;
}

/** An answer as sent: its status and its JSON text. */
export interface StoredAnswer {
  readonly status: number;
  readonly body: string;
}

/**
 * What a key keeps of an act: a reference where the answer can be rebuilt, its text where it cannot.
 * `allow`: a counted call was allowed (and counted) under `decisionId`. `redeem`: approval
 * `approvalId` was consumed, the call allowed under `decisionId`. `filed`: approval `approvalId` was
 * filed (or found live). `body`: the answer itself.
 */
export type KeptAnswer =
  | { readonly kind: 'allow'; readonly status: number; readonly decisionId: string }
  | { readonly kind: 'redeem'; readonly status: number; readonly decisionId: string; readonly approvalId: string }
  | { readonly kind: 'filed'; readonly status: number; readonly approvalId: string }
  | { readonly kind: 'body'; readonly status: number; readonly body: string };

/** An act's answer, and what to keep of it for its key (null: nothing was done that a retry must not redo). */
export interface Acted {
  readonly answer: StoredAnswer;
  readonly kept: KeptAnswer | null;
}

/** What one caller (`sub`) may keep at once, over every route (IDEMPOTENCY_MAX_KEYS, IDEMPOTENCY_MAX_BYTES). */
export interface KeyCaps {
  readonly maxKeys: number;
  /** Bytes of the keys and the answers kept as text (a reference row counts its key only). */
  readonly maxBytes: number;
}

export const DEFAULT_KEY_CAPS: KeyCaps = Object.freeze({ maxKeys: 1000, maxBytes: 1_048_576 });

/** How long a key's answer is kept. */
export const KEY_TTL = '24 hours';

/** 1–255 visible ASCII characters (the IETF draft's key is a string; Stripe's are up to 255). */
export const IDEMPOTENCY_KEY = /^[!-~]{1,255}$/;

export class IdempotencyKeyReusedError extends Error {
  constructor(readonly what: 'body' | 'identity') {
    super(`this Idempotency-Key was used with another ${what}`);
    this.name = 'IdempotencyKeyReusedError';
  }
}

/** The caller keeps as many keys or bytes as it may: the act was rolled back. */
export class IdempotencyLimitError extends Error {
  constructor(
    readonly limit: 'keys' | 'bytes',
    readonly max: number,
    /** Seconds until the caller's oldest key is forgotten. */
    readonly retryAfterSec: number,
  ) {
    super(`the caller keeps ${max} Idempotency-Key ${limit} already`);
    this.name = 'IdempotencyLimitError';
  }
}

interface KeyRow {
  body_hash: string;
  identity_hash: string;
  kind: KeptAnswer['kind'];
  status: number;
  approval_id: string | null;
  decision_id: string | null;
  response: string | null;
}

/**
 * Runs `act` at most once per key, in `tx`, under the key's lock. With a row for the key (422 if it was
 * for another body or another identity), `replay` rebuilds the answer from it, or gives null when the
 * request as decided now is not answered by what was done. Then, as without a row, `act` runs and
 * what it keeps replaces the row, unless the caller would then keep more than `caps` allow
 * (IdempotencyLimitError: the caller rolls the transaction back, so the act is undone).
 */
export async function onceForKey(
  tx: TransactionSql,
  claim: IdempotencyClaim,
  act: () => Promise<Acted>,
  replay: (kept: KeptAnswer) => Promise<StoredAnswer | null>,
  caps: KeyCaps,
): Promise<StoredAnswer & { replayed: boolean }> {
  const { sub, route, key, bodyHash, identityHash } = claim;
  // A transaction-scoped lock on the key: a concurrent retry waits here until this one commits.
  await tx`select pg_advisory_xact_lock(hashtextextended(${`${sub}\n${route}\n${key}`}, 0))`;
  const [prior] = await tx<KeyRow[]>`
    select body_hash, identity_hash, kind, status, approval_id, decision_id, response from idempotency_keys
     where sub = ${sub} and route = ${route} and key = ${key} and created_at > now() - ${KEY_TTL}::interval`;
  if (prior !== undefined) {
    if (prior.body_hash !== bodyHash) throw new IdempotencyKeyReusedError('body');
    if (prior.identity_hash !== identityHash) throw new IdempotencyKeyReusedError('identity');
    const again = await replay(keptOf(prior));
    if (again !== null) return { ...again, replayed: true };
  }
  const { answer, kept } = await act();
  if (kept !== null) {
    await checkCaps(tx, claim, kept, caps);
    const approvalId = kept.kind === 'redeem' || kept.kind === 'filed' ? kept.approvalId : null;
    const decisionId = kept.kind === 'allow' || kept.kind === 'redeem' ? kept.decisionId : null;
    const response = kept.kind === 'body' ? kept.body : null;
    // A row older than the TTL and not yet swept is replaced.
    await tx`
      insert into idempotency_keys (sub, route, key, body_hash, identity_hash, kind, status, approval_id, decision_id, response)
      values (${sub}, ${route}, ${key}, ${bodyHash}, ${identityHash}, ${kept.kind}, ${kept.status}, ${approvalId}, ${decisionId}, ${response})
      on conflict (sub, route, key) do update
        set body_hash = excluded.body_hash, identity_hash = excluded.identity_hash, kind = excluded.kind, status = excluded.status,
            approval_id = excluded.approval_id, decision_id = excluded.decision_id, response = excluded.response, created_at = now()`;
  }
  return { ...answer, replayed: false };
}

/**
 * Refuses a new row that would take the caller past its caps. Concurrent requests with different keys
 * are not serialized against each other (each holds only its own key's lock), so one caller may pass
 * a cap by as many new keys as it has in flight at once.
 */
async function checkCaps(tx: TransactionSql, claim: IdempotencyClaim, kept: KeptAnswer, caps: KeyCaps): Promise<void> {
  const { sub, route, key } = claim;
  // The row this one replaces (the same key, past its TTL or no longer answering) is not counted.
  const [held] = await tx<{ keys: number; bytes: number; oldest_left: number | null }[]>`
    select count(*)::int as keys,
           coalesce(sum(octet_length(key) + coalesce(octet_length(response), 0)), 0)::bigint::float8 as bytes,
           extract(epoch from min(created_at) + ${KEY_TTL}::interval - now())::float8 as oldest_left
      from idempotency_keys
     where sub = ${sub} and created_at > now() - ${KEY_TTL}::interval and (route, key) <> (${route}, ${key})`;
  const bytes = Buffer.byteLength(key) + (kept.kind === 'body' ? Buffer.byteLength(kept.body) : 0);
  const retryAfter = Math.max(1, Math.ceil(held?.oldest_left ?? 1));
  if ((held?.keys ?? 0) + 1 > caps.maxKeys) throw new IdempotencyLimitError('keys', caps.maxKeys, retryAfter);
  if ((held?.bytes ?? 0) + bytes > caps.maxBytes) throw new IdempotencyLimitError('bytes', caps.maxBytes, retryAfter);
}

function keptOf(row: KeyRow): KeptAnswer {
  switch (row.kind) {
    case 'allow':
      return { kind: 'allow', status: row.status, decisionId: row.decision_id! }; // the table's check: set for this kind
    case 'redeem':
      return { kind: 'redeem', status: row.status, decisionId: row.decision_id!, approvalId: row.approval_id! };
    case 'filed':
      return { kind: 'filed', status: row.status, approvalId: row.approval_id! };
    case 'body':
      return { kind: 'body', status: row.status, body: row.response! };
  }
}

/** Deletes the keys past their TTL; returns how many. */
export async function sweepKeys(tx: TransactionSql): Promise<number> {
  const rows = await tx`delete from idempotency_keys where created_at <= now() - ${KEY_TTL}::interval returning 1`;
  return rows.length;
}

/** Keyed acts on one pool, each one transaction under the deadline (docs/spec.md section 5.3). */
export interface Keys {
  /** `act` at most once per key (onceForKey); a retry gets what `replay` rebuilds from what the key kept. */
  once(
    claim: IdempotencyClaim,
    act: (tx: TransactionSql) => Promise<Acted>,
    replay: (tx: TransactionSql, kept: KeptAnswer) => Promise<StoredAnswer | null>,
  ): Promise<StoredAnswer & { replayed: boolean }>;
}

export function createKeys(sql: Sql, options: { deadlineMs: number; caps?: KeyCaps }): Keys {
  const caps = options.caps ?? DEFAULT_KEY_CAPS;
  for (const [name, value] of Object.entries(caps)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`caps.${name} must be a positive integer`);
  }
  return {
    once: (claim, act, replay) =>
      withDeadline(sql, options.deadlineMs, (tx) =>
        onceForKey(
          tx,
          claim,
          () => act(tx),
          (kept) => replay(tx, kept),
          caps,
        ),
      ),
  };
}
