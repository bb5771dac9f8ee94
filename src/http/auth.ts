// Bearer JWT → Identity, with one of two kinds of keys:
// - an HS256 secret or one PEM public key: @fastify/jwt (fast-jwt) pinned to the one algorithm the
//   key allows (RFC 8725 section 3.1);
// - the identity provider's JWKS (src/http/jwks.ts): jose selects the key by `kid`, and each key
//   pins its own type and algorithm; only asymmetric algorithms are accepted.
// Both then apply the same checks (verifiedIdentity): `exp` and `sub` required, the lifetime
// (`exp - now`) bounded, `iss`/`aud` when configured, `iat` and `typ`, and team, agent and roles
// read only from verified claims. Every failure is 401; a JWKS not loaded yet is 503; a role missing
// for a route is 403.
import fastifyJwt from '@fastify/jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errors as joseErrors, jwtVerify } from 'jose';
import type { Config } from '../config.js';
import { parseJson } from '../json/parse.js';
import { isJsonObject, type JsonObject } from '../json/value.js';
import type { Identity } from '../policy/model.js';
import { ClaimError, identityFromClaims, type ClaimNames } from '../policy/claims.js';
import { HttpError } from './errors.js';
import { headerCount } from './headers.js';
import { JWKS_ALGORITHMS, type JwksKeys } from './jwks.js';

interface AuthCommon {
  readonly issuer: string | null;
  readonly audience: string | null;
  readonly clockToleranceSec: number;
  /** JWT_MAX_LIFETIME (seconds). */
  readonly maxLifetimeSec: number;
  readonly claims: Config['claims'];
}

export interface StaticKeyAuth extends AuthCommon {
  /** HS256 secret or PEM public key, and the algorithm it pins. */
  readonly key: string;
  readonly algorithm: NonNullable<Config['jwt']['algorithm']>;
  readonly jwks?: undefined;
}

export interface JwksAuth extends AuthCommon {
  /** The provider's key set (JWT_JWKS_URL); its owner starts and closes it. */
  readonly jwks: JwksKeys;
  readonly key?: undefined;
  readonly algorithm?: undefined;
}

export type AuthOptions = StaticKeyAuth | JwksAuth;

declare module 'fastify' {
  interface FastifyRequest {
    identity: Identity | null;
  }
  interface FastifyInstance {
    /** Whether tokens can be checked: false only for a JWKS before its first good fetch (/readyz). */
    jwtKeysLoaded(): boolean;
  }
}

/** Longest token accepted: well above real tokens, far below the header limit. */
const MAX_TOKEN_LENGTH = 8192;
const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/;

export async function registerAuth(app: FastifyInstance, options: AuthOptions): Promise<void> {
  app.decorateRequest('identity', null);
  const jwks = options.jwks;
  app.decorate('jwtKeysLoaded', jwks === undefined ? () => true : () => jwks.loaded());
  if (options.jwks !== undefined) return; // jose verifies those tokens (createAuthenticator)
  await app.register(fastifyJwt, {
    secret: options.algorithm === 'HS256' ? options.key : { public: options.key },
    verify: {
      algorithms: [options.algorithm],
      // fast-jwt skips the iss/aud check when the claim is absent: require them when configured.
      requiredClaims: [
        'exp',
        'sub',
        ...(options.issuer !== null ? ['iss'] : []),
        ...(options.audience !== null ? ['aud'] : []),
      ],
      // fast-jwt takes milliseconds here; @fastify/jwt only converts maxAge.
      clockTolerance: options.clockToleranceSec * 1000,
      ...(options.issuer !== null ? { allowedIss: options.issuer } : {}),
      ...(options.audience !== null ? { allowedAud: options.audience } : {}),
    },
  });
}

/** Verified tokens kept, so a token seen before costs a map lookup; bounded. */
const TOKEN_CACHE_SIZE = 10_000;

/** A verified token's identity, or (JWKS, first sight of the token) a promise of it. */
export type Authenticate = (request: FastifyRequest) => Identity | Promise<Identity>;

/**
 * The request authenticator of one app: verify the bearer token and set `request.identity`, or
 * throw 401. A verified token's identity is cached under the whole token (never a derived key: a
 * colliding key would hand one caller another's identity, GHSA-rp9m-7r4c-75qg) until its `exp`
 * plus the clock tolerance, which is checked on every use. A token living longer than the maximum
 * lifetime is refused before it is cached, and no entry outlives the check time plus that maximum.
 * With a JWKS the cache is emptied whenever the key set changes (a key withdrawn from the set stops
 * authenticating at once), and only a token not in the cache is checked asynchronously: the cache
 * hit and the static-key path return synchronously.
 */
export function createAuthenticator(app: FastifyInstance, options: AuthOptions): Authenticate {
  const cache = new Map<string, { identity: Identity; expiresAtMs: number }>();
  const toleranceMs = options.clockToleranceSec * 1000;
  // A NaN here would switch the lifetime check off and the cache with it: refuse it at start.
  if (!Number.isSafeInteger(options.maxLifetimeSec) || options.maxLifetimeSec <= 0)
    throw new RangeError('maxLifetimeSec must be a positive integer');
  const maxLifetimeMs = options.maxLifetimeSec * 1000;
  const checks: ClaimChecks = {
    issuer: options.issuer,
    audience: options.audience,
    toleranceMs,
    maxLifetimeMs,
    claims: options.claims,
  };
  const keys = options.jwks;
  let cacheGeneration = keys?.generation() ?? 0;

  const remember = (token: string, verified: Verified, now: number): Identity => {
    if (cache.size >= TOKEN_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    cache.set(token, {
      identity: verified.identity,
      expiresAtMs: Math.min(verified.expMs, now + maxLifetimeMs) + toleranceMs,
    });
    return verified.identity;
  };

  const verifyWithJwks = async (jwks: JwksKeys, token: string, header: JsonObject): Promise<Identity> => {
    const kid = header.kid;
    if (kid === undefined) {
      // jose would pick the one key of the token's type; with several keys a token must say which.
      if (jwks.size() !== 1)
        throw new HttpError('unauthorized', 'the token names no key (`kid`) and the key set holds several');
    } else if (typeof kid !== 'string') {
      throw new HttpError('unauthorized', 'the token is not valid');
    } else if (!jwks.hasKid(kid)) {
      await jwks.refreshForUnknownKid(); // the provider may have rotated its keys
      if (!jwks.hasKid(kid)) throw new HttpError('unauthorized', "the token's key (`kid`) is not in the key set");
    }
    const generation = jwks.generation();
    let payload: unknown;
    try {
      ({ payload } = await jwtVerify(token, jwks.getKey, {
        algorithms: [...JWKS_ALGORITHMS],
        clockTolerance: options.clockToleranceSec,
        requiredClaims: ['exp', 'sub'],
        ...(options.issuer !== null ? { issuer: options.issuer } : {}),
        ...(options.audience !== null ? { audience: options.audience } : {}),
      }));
    } catch (err) {
      if (!(err instanceof joseErrors.JOSEError)) throw err; // a bug: 500, nothing authenticated
      throw new HttpError(
        'unauthorized',
        err.code === 'ERR_JWT_EXPIRED' ? 'the token has expired' : 'the token is not valid',
      );
    }
    const now = Date.now();
    const verified = verifiedIdentity(header, payload, now, checks);
    // Verified against a set that has changed meanwhile: answered, not cached.
    return generation === jwks.generation() ? remember(token, verified, now) : verified.identity;
  };

  return (request) => {
    const header = request.headers.authorization;
    if (header === undefined) throw new HttpError('unauthorized', 'send Authorization: Bearer <token>');
    // Node keeps the first of repeated Authorization headers and drops the rest; a proxy may keep
    // another. Two credentials are ambiguous: refuse rather than pick one.
    if (headerCount(request.raw.rawHeaders, 'authorization') > 1)
      throw new HttpError('unauthorized', 'send exactly one Authorization header');
    if (header.length > MAX_TOKEN_LENGTH + 7) throw new HttpError('unauthorized', 'the token is too long');
    const m = BEARER.exec(header);
    if (!m) throw new HttpError('unauthorized', 'the Authorization header is not a bearer token');
    const token = m[1]!;
    const now = Date.now();
    if (keys !== undefined && keys.generation() !== cacheGeneration) {
      cache.clear();
      cacheGeneration = keys.generation();
    }
    const hit = cache.get(token);
    if (hit !== undefined) {
      if (now <= hit.expiresAtMs) return (request.identity = hit.identity);
      cache.delete(token);
    }
    if (keys !== undefined && !keys.loaded()) {
      // Not the token's fault: the keys to check it with have not arrived yet.
      throw new HttpError('unavailable', 'the token signing keys (JWT_JWKS_URL) are not loaded yet; retry', {
        retryAfterSec: 2,
      });
    }
    const segments = strictHeader(token);
    if (segments === null) throw new HttpError('unauthorized', 'the token is not valid');
    if (keys !== undefined) {
      return verifyWithJwks(keys, token, segments).then((identity) => (request.identity = identity));
    }
    let payload: unknown;
    try {
      payload = app.jwt.verify(token);
    } catch (err) {
      const code = (err as { code?: string }).code;
      throw new HttpError(
        'unauthorized',
        code === 'FAST_JWT_EXPIRED' ? 'the token has expired' : 'the token is not valid',
      );
    }
    return (request.identity = remember(token, verifiedIdentity(segments, payload, now, checks), now));
  };
}

/**
 * The header and the claims must be strict JSON (RFC 8725 section 2.6, RFC 7493). fast-jwt and jose
 * read them with JSON.parse, which keeps the LAST of duplicate names ({"roles":[],"roles":["approver"]}),
 * turns `1e400` into Infinity (an `exp` that never passes) and replaces invalid UTF-8 with U+FFFD. A
 * header with `crit` names an extension we do not implement (RFC 7515 section 4.1.11; fast-jwt lets
 * `"crit": null` through): refused whatever its value. Returns the header, or null.
 */
function strictHeader(token: string): JsonObject | null {
  const [head, body] = token.split('.');
  try {
    const header = parseJson(Buffer.from(head!, 'base64url'), { maxDepth: 32 });
    parseJson(Buffer.from(body!, 'base64url'), { maxDepth: 32 });
    return isJsonObject(header) && !Object.hasOwn(header, 'crit') ? header : null;
  } catch {
    return null;
  }
}

interface ClaimChecks {
  readonly issuer: string | null;
  readonly audience: string | null;
  readonly toleranceMs: number;
  readonly maxLifetimeMs: number;
  readonly claims: Config['claims'];
}

interface Verified {
  readonly identity: Identity;
  /** `exp`, in ms. */
  readonly expMs: number;
}

// RFC 7515 section 4.1.9: `typ` is a media type, compared case-insensitively, and may omit its
// "application/" prefix. JWT (RFC 7519 section 5.1) and at+jwt (RFC 9068 access tokens) are the ones
// a bearer token may declare; another type (a logout token, an ID token of another profile, a JWS of
// anything) is refused (RFC 8725 section 3.11). Without the u flag, /i folds ASCII letters only.
const TYP = /^(?:application\/)?(?:at\+)?jwt$/i;

/**
 * The checks after the signature, the same for both kinds of keys, whatever the verifying library
 * already checked: the header's `typ`; `exp` (required), `nbf` and `iat` as NumericDates (RFC 7519
 * section 2: a finite number of seconds) against the clock tolerance; the lifetime bound; `iss` and
 * `aud` when configured (then required); and the identity claims.
 */
export function verifiedIdentity(header: JsonObject, payload: unknown, nowMs: number, checks: ClaimChecks): Verified {
  if (!isJsonObject(payload)) throw new HttpError('unauthorized', 'the token has no claims');
  const p: JsonObject = payload;
  const typ = header.typ;
  if (typ !== undefined && !(typeof typ === 'string' && TYP.test(typ))) {
    throw new HttpError('unauthorized', "the token header's `typ` must be JWT or at+jwt");
  }
  const tol = checks.toleranceMs;
  const exp = p.exp;
  if (!isNumericDate(exp)) throw new HttpError('unauthorized', 'the token needs an `exp` NumericDate');
  if (exp * 1000 + tol < nowMs) throw new HttpError('unauthorized', 'the token has expired');
  // An `exp` of 1e20, or one written in milliseconds, would otherwise be a credential valid for
  // millennia, only revocable by rotating the key. The value is never echoed.
  if (exp * 1000 > nowMs + checks.maxLifetimeMs + tol) {
    throw new HttpError('unauthorized', "the token's lifetime is longer than this server accepts");
  }
  if (Object.hasOwn(p, 'nbf') && !(isNumericDate(p.nbf) && p.nbf * 1000 <= nowMs + tol)) {
    throw new HttpError('unauthorized', 'the token is not valid yet (`nbf`)');
  }
  // A token issued in the future comes from a wrong clock or a forger planning ahead (RFC 7519 section 4.1.6).
  if (Object.hasOwn(p, 'iat') && !(isNumericDate(p.iat) && p.iat * 1000 <= nowMs + tol)) {
    throw new HttpError('unauthorized', "the token's `iat` must be a NumericDate not in the future");
  }
  if (checks.issuer !== null && p.iss !== checks.issuer)
    throw new HttpError('unauthorized', 'the token is not from the configured issuer (`iss`)');
  if (checks.audience !== null && !hasAudience(p.aud, checks.audience)) {
    throw new HttpError('unauthorized', 'the token is not meant for this service (`aud`)');
  }
  return { identity: bearerIdentity(p, checks.claims), expMs: exp * 1000 };
}

function isNumericDate(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0;
}

/** RFC 7519 section 4.1.3: a string, or an array of strings holding ours. */
function hasAudience(aud: unknown, audience: string): boolean {
  if (typeof aud === 'string') return aud === audience;
  return Array.isArray(aud) && aud.every((a) => typeof a === 'string') && aud.includes(audience);
}

/** The claims' identity, or 401 naming what is wrong (src/policy/claims.ts). */
function bearerIdentity(payload: JsonObject, claims: ClaimNames): Identity {
  try {
    return identityFromClaims(payload, claims);
  } catch (err) {
    if (err instanceof ClaimError) throw new HttpError('unauthorized', err.message);
    throw err;
  }
}

/**
 * A route's onRequest hook requiring one of `roles` (403 otherwise), run right after authentication:
 * before the body is parsed or validated, so a caller without the role learns nothing about what a
 * valid body would be. Roles match by exact element equality: no case folding, no prefixes. No
 * roles at all: nobody passes.
 */
export function requireRole(...roles: readonly string[]) {
  const needed =
    roles.length === 1 ? `the role "${roles[0]}"` : `one of the roles ${roles.map((r) => `"${r}"`).join(', ')}`;
  const forbidden = `this needs ${needed}`;
  return (request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void => {
    const held = (request.identity as Identity).roles;
    done(roles.some((role) => held.includes(role)) ? undefined : new HttpError('forbidden', forbidden));
  };
}
