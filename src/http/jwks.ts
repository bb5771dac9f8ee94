// The identity provider's signing keys, from JWT_JWKS_URL (RFC 7517): fetched at start, kept,
// refreshed on an interval and when a token names a key we do not hold. A failed fetch or a document
// without a usable key never replaces the last good set. Key import and selection (kid, kty, alg,
// crv) are jose's (createLocalJWKSet); this module only decides what to fetch, when, and what to keep.
import { createPublicKey, type JsonWebKeyInput } from 'node:crypto';
import { createLocalJWKSet, type JWK, type JWTVerifyGetKey } from 'jose';
import type { Logger } from 'pino';

/**
 * The algorithms a JWKS key may verify: asymmetric signatures only, so an HS256 token keyed with a
 * public key's bytes (algorithm confusion, RFC 8725 section 2.1) never verifies. jose also ties each
 * to its key type and curve (RS*, PS* → RSA; ES256/384/512 → P-256/384/521; EdDSA, Ed25519 → Ed25519).
 */
export const JWKS_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

export interface JwksOptions {
  readonly url: string;
  /** JWT_JWKS_REFRESH: time between two scheduled fetches once a set is loaded. */
  readonly refreshMs: number;
  /** Least time between two fetches asked for by tokens naming an unknown `kid` (default 30 s). */
  readonly cooldownMs?: number;
  /** Until the first good set: time between attempts (default 5 s). */
  readonly retryMs?: number;
  /** Longest one fetch may take, body included (default 5 s). */
  readonly timeoutMs?: number;
  readonly log?: Logger;
}

export interface JwksKeys {
  /** Fetches now and schedules the next fetches; resolves once the first attempt is over, with whether a set is loaded. */
  start(): Promise<boolean>;
  /** A good set was fetched at least once (tokens before that answer 503). */
  loaded(): boolean;
  /** Changes whenever the set of keys changes: verified tokens cached under another generation are checked again. */
  generation(): number;
  /** How many usable keys the set holds. */
  size(): number;
  hasKid(kid: string): boolean;
  /** For jose's jwtVerify: the key of the current set that the header selects. */
  readonly getKey: JWTVerifyGetKey;
  /**
   * Fetches again because a token named an unknown `kid`: at most once per cooldown, so a flood of
   * random kids cannot hammer the provider. Resolves when that fetch (or one already running) is over.
   */
  refreshForUnknownKid(): Promise<void>;
  /** Stops the timer; a fetch in flight is not followed by another. */
  close(): void;
}

const MAX_DOCUMENT_BYTES = 512 * 1024;
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv'] as const;
const ALGORITHMS_OF_KTY: Readonly<Record<string, readonly string[]>> = {
  RSA: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'],
  EC: ['ES256', 'ES384', 'ES512'],
  OKP: ['EdDSA', 'Ed25519'],
};
const EC_CURVES: Readonly<Record<string, string>> = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' };

interface KeySet {
  readonly keys: readonly JWK[];
  readonly kids: ReadonlySet<string>;
  readonly select: JWTVerifyGetKey;
  /** The keys as fetched, to tell a changed set from the same one fetched again. */
  readonly text: string;
}

export function createJwksKeys(options: JwksOptions): JwksKeys {
  const cooldownMs = options.cooldownMs ?? 30_000;
  const retryMs = options.retryMs ?? 5_000;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const log = options.log;
  let current: KeySet | null = null;
  let generation = 0;
  let inFlight: Promise<boolean> | null = null;
  let lastKidRefresh = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const fetchOnce = async (): Promise<boolean> => {
    let next: KeySet;
    try {
      next = keySetOf(await fetchDocument(options.url, timeoutMs));
    } catch (err) {
      // The URL is configuration, not a secret; the keys kept are the last good ones.
      log?.warn(
        { url: options.url, reason: (err as Error).message, keys: current === null ? 'none yet' : 'kept' },
        'the JWKS could not be fetched',
      );
      return current !== null;
    }
    if (current === null || current.text !== next.text) {
      generation++;
      log?.info(
        { url: options.url, keys: next.keys.length },
        current === null ? 'loaded the JWKS' : 'the JWKS changed',
      );
    }
    current = next;
    return true;
  };
  const refresh = (): Promise<boolean> => {
    inFlight ??= fetchOnce().finally(() => (inFlight = null));
    return inFlight;
  };
  const schedule = (): void => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => void refresh().then(schedule, schedule), current === null ? retryMs : options.refreshMs);
    timer.unref();
  };

  return {
    async start() {
      const ok = await refresh();
      schedule();
      return ok;
    },
    loaded: () => current !== null,
    generation: () => generation,
    size: () => current?.keys.length ?? 0,
    hasKid: (kid) => current?.kids.has(kid) ?? false,
    getKey: async (header, token) => {
      if (current === null) throw new Error('the JWKS is not loaded');
      return current.select(header, token);
    },
    async refreshForUnknownKid() {
      if (closed) return;
      if (inFlight === null) {
        const now = Date.now();
        if (now - lastKidRefresh < cooldownMs) return;
        lastKidRefresh = now;
      }
      await refresh();
    },
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}

/** GET the document: no redirects (the configured URL is the one trusted), bounded in time and size. */
async function fetchDocument(url: string, timeoutMs: number): Promise<unknown> {
  const res = await fetch(url, {
    headers: { accept: 'application/jwk-set+json, application/json' },
    redirect: 'error',
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`HTTP ${res.status}`);
  }
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > MAX_DOCUMENT_BYTES) {
    await res.body?.cancel();
    throw new Error('the document is too large');
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (res.body !== null) {
    for await (const chunk of res.body) {
      size += chunk.byteLength;
      if (size > MAX_DOCUMENT_BYTES) throw new Error('the document is too large');
      chunks.push(chunk);
    }
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}

/**
 * The usable keys of a JWK Set document; throws when it holds none (the last good set stays). A key
 * is kept when it is a public signature key of a type and curve in JWKS_ALGORITHMS, with an `alg`
 * (if any) among those of its type, whose material Node can import. Others (encryption keys,
 * symmetric or private keys, unknown types) are left out, not an error: providers publish them.
 */
export function keySetOf(document: unknown): KeySet {
  if (document === null || typeof document !== 'object' || !Array.isArray((document as { keys?: unknown }).keys)) {
    throw new Error('the document is not a JWK Set');
  }
  const keys: JWK[] = [];
  for (const candidate of (document as { keys: unknown[] }).keys) {
    if (isUsable(candidate)) keys.push(candidate);
  }
  if (keys.length === 0) throw new Error('the JWK Set holds no usable signature key');
  const kids = new Set<string>();
  for (const k of keys) if (typeof k.kid === 'string') kids.add(k.kid);
  return { keys, kids, select: createLocalJWKSet({ keys }), text: JSON.stringify(keys) };
}

function isUsable(jwk: unknown): jwk is JWK {
  if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk)) return false;
  const k = jwk as Record<string, unknown>;
  const algorithms =
    typeof k.kty === 'string' && Object.hasOwn(ALGORITHMS_OF_KTY, k.kty) ? ALGORITHMS_OF_KTY[k.kty]! : null;
  if (algorithms === null) return false;
  if (PRIVATE_MEMBERS.some((m) => Object.hasOwn(k, m))) return false;
  if (k.use !== undefined && k.use !== 'sig') return false;
  if (k.key_ops !== undefined && !(Array.isArray(k.key_ops) && k.key_ops.includes('verify'))) return false;
  if (k.kid !== undefined && typeof k.kid !== 'string') return false;
  if (k.alg !== undefined && !(typeof k.alg === 'string' && algorithms.includes(k.alg))) return false;
  if (
    k.kty === 'EC' &&
    !(
      typeof k.crv === 'string' &&
      Object.hasOwn(EC_CURVES, k.crv) &&
      (k.alg === undefined || EC_CURVES[k.crv] === k.alg)
    )
  )
    return false;
  if (k.kty === 'OKP' && k.crv !== 'Ed25519') return false;
  try {
    const key = createPublicKey({ key: k as JsonWebKeyInput['key'], format: 'jwk' });
    // jose refuses shorter RSA keys when verifying: leaving them out keeps size() (the no-kid rule) honest.
    if (key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) return false;
  } catch {
    return false;
  }
  return true;
}
