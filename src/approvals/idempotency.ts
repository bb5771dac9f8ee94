// Idempotency-Key (docs/spec.md section 5.3): the answer a caller's key was given, kept 24 hours, so
// that a retry after a lost answer reads it instead of acting twice. The key's lock, the act and the
// answer are one transaction (migrations/0008): a kept answer is one that was given.
import type { TransactionSql } from 'postgres';

export type IdempotentRoute = 'decide' | 'approvals' | 'usage';

/** Who asks with which key, and the SHA-256 of the canonical body the key was first used with. */
export interface IdempotencyClaim {
  readonly sub: string;
  readonly route: IdempotentRoute;
  readonly key: string;
  readonly bodyHash: string;
}

/** An answer as sent: its status and its JSON text. */
export interface StoredAnswer {
  readonly status: number;
  readonly body: string;
}

/** How long a key's answer is kept. */
export const KEY_TTL = '24 hours';

/** 1–255 visible ASCII characters (the IETF draft's key is a string; Stripe's are up to 255). */
export const IDEMPOTENCY_KEY = /^[!-~]{1,255}$/;

export class IdempotencyKeyReusedError extends Error {
  constructor() {
    super('this Idempotency-Key was used with another body');
    this.name = 'IdempotencyKeyReusedError';
  }
}

/**
 * Runs `act` at most once per key: under the key's lock, the kept answer if there is one (422 if it
 * was for another body), else `act`'s answer, kept when `kept(status)`. Call inside a transaction.
 */
export async function onceForKey(
  tx: TransactionSql,
  claim: IdempotencyClaim,
  act: () => Promise<StoredAnswer>,
  kept: (status: number) => boolean,
): Promise<StoredAnswer & { replayed: boolean }> {
  const { sub, route, key, bodyHash } = claim;
  // A transaction-scoped lock on the key: a concurrent retry waits here until this one commits.
  await tx`select pg_advisory_xact_lock(hashtextextended(${`${sub}\n${route}\n${key}`}, 0))`;
  const [prior] = await tx<{ body_hash: string; status: number; response: string }[]>`
    select body_hash, status, response from idempotency_keys
     where sub = ${sub} and route = ${route} and key = ${key} and created_at > now() - ${KEY_TTL}::interval`;
  if (prior !== undefined) {
    if (prior.body_hash !== bodyHash) throw new IdempotencyKeyReusedError();
    return { status: prior.status, body: prior.response, replayed: true };
  }
  const answer = await act();
  if (kept(answer.status)) {
    // A row older than the TTL and not yet swept is replaced.
    await tx`
      insert into idempotency_keys (sub, route, key, body_hash, status, response)
      values (${sub}, ${route}, ${key}, ${bodyHash}, ${answer.status}, ${answer.body})
      on conflict (sub, route, key) do update
        set body_hash = excluded.body_hash, status = excluded.status, response = excluded.response, created_at = now()`;
  }
  return { ...answer, replayed: false };
}

/** Deletes the keys past their TTL; returns how many. */
export async function sweepKeys(tx: TransactionSql): Promise<number> {
  const rows = await tx`delete from idempotency_keys where created_at <= now() - ${KEY_TTL}::interval returning 1`;
  return rows.length;
}
