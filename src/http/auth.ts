// Bearer JWT → Identity. The server pins the one algorithm its key allows (RFC 8725 section 3.1),
// requires `exp` and `sub`, bounds the lifetime (`exp - now`), checks `iss`/`aud` when configured,
// and reads team, agent and roles only from verified claims. Every failure is 401; a role missing
// for a route is 403.
import fastifyJwt from '@fastify/jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { parseJson } from '../json/parse.js';
import { isWellFormed } from '../json/unicode.js';
import { isJsonObject } from '../json/value.js';
import type { Identity } from '../policy/model.js';
import { HttpError } from './errors.js';
import { headerCount } from './headers.js';

export interface AuthOptions {
  /** HS256 secret or PEM public key, and the algorithm it pins. */
  readonly key: string;
  readonly algorithm: NonNullable<Config['jwt']['algorithm']>;
  readonly issuer: string | null;
  readonly audience: string | null;
  readonly clockToleranceSec: number;
  /** JWT_MAX_LIFETIME (seconds). */
  readonly maxLifetimeSec: number;
  readonly claims: Config['claims'];
}

declare module 'fastify' {
  interface FastifyRequest {
    identity: Identity | null;
  }
}

/** Longest token accepted: well above real tokens, far below the header limit. */
const MAX_TOKEN_LENGTH = 8192;
const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/;

export async function registerAuth(app: FastifyInstance, options: AuthOptions): Promise<void> {
  await app.register(fastifyJwt, {
    secret: options.algorithm === 'HS256' ? options.key : { public: options.key },
    verify: {
      algorithms: [options.algorithm],
      // fast-jwt skips the iss/aud check when the claim is absent: require them when configured.
      requiredClaims: ['exp', 'sub', ...(options.issuer !== null ? ['iss'] : []), ...(options.audience !== null ? ['aud'] : [])],
      // fast-jwt takes milliseconds here; @fastify/jwt only converts maxAge.
      clockTolerance: options.clockToleranceSec * 1000,
      ...(options.issuer !== null ? { allowedIss: options.issuer } : {}),
      ...(options.audience !== null ? { allowedAud: options.audience } : {}),
    },
  });
  app.decorateRequest('identity', null);
}

/** Verified tokens kept, so a token seen before costs a map lookup (issue 5); bounded. */
const TOKEN_CACHE_SIZE = 10_000;

/**
 * The request authenticator of one app: verify the bearer token and set `request.identity`, or
 * throw 401. A verified token's identity is cached under the whole token (never a derived key: a
 * colliding key would hand one caller another's identity, GHSA-rp9m-7r4c-75qg) until its `exp`
 * plus the clock tolerance, which is checked on every use. A token living longer than the maximum
 * lifetime is refused before it is cached, and no entry outlives the check time plus that maximum.
 */
export function createAuthenticator(app: FastifyInstance, options: AuthOptions): (request: FastifyRequest) => Identity {
  const cache = new Map<string, { identity: Identity; expiresAtMs: number }>();
  const toleranceMs = options.clockToleranceSec * 1000;
  // A NaN here would switch the lifetime check off and the cache with it: refuse it at start.
  if (!Number.isSafeInteger(options.maxLifetimeSec) || options.maxLifetimeSec <= 0) throw new RangeError('maxLifetimeSec must be a positive integer');
  const maxLifetimeMs = options.maxLifetimeSec * 1000;
  return (request) => {
    const header = request.headers.authorization;
    if (header === undefined) throw new HttpError('unauthorized', 'send Authorization: Bearer <token>');
    // Node keeps the first of repeated Authorization headers and drops the rest; a proxy may keep
    // another. Two credentials are ambiguous: refuse rather than pick one.
    if (headerCount(request.raw.rawHeaders, 'authorization') > 1) throw new HttpError('unauthorized', 'send exactly one Authorization header');
    if (header.length > MAX_TOKEN_LENGTH + 7) throw new HttpError('unauthorized', 'the token is too long');
    const m = BEARER.exec(header);
    if (!m) throw new HttpError('unauthorized', 'the Authorization header is not a bearer token');
    const token = m[1]!;
    const now = Date.now();
    const hit = cache.get(token);
    if (hit !== undefined) {
      if (now <= hit.expiresAtMs) return (request.identity = hit.identity);
      cache.delete(token);
    }
    if (!strictSegments(token)) throw new HttpError('unauthorized', 'the token is not valid');
    let payload: unknown;
    try {
      payload = app.jwt.verify(token);
    } catch (err) {
      const code = (err as { code?: string }).code;
      throw new HttpError('unauthorized', code === 'FAST_JWT_EXPIRED' ? 'the token has expired' : 'the token is not valid');
    }
    const exp = (payload as { exp: number }).exp; // required and checked by the verifier
    // An `exp` of 1e20, or one written in milliseconds, would otherwise be a credential valid for
    // millennia, only revocable by rotating the key. The value is never echoed.
    if (exp * 1000 > now + maxLifetimeMs + toleranceMs) {
      throw new HttpError('unauthorized', "the token's lifetime is longer than this server accepts");
    }
    const identity = identityFromClaims(payload, options.claims);
    if (cache.size >= TOKEN_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    cache.set(token, { identity, expiresAtMs: Math.min(exp * 1000, now + maxLifetimeMs) + toleranceMs });
    return (request.identity = identity);
  };
}

/**
 * The header and the claims must be strict JSON (RFC 8725 section 2.6, RFC 7493). fast-jwt reads them
 * with JSON.parse, which keeps the LAST of duplicate names ({"roles":[],"roles":["approver"]}), turns
 * `1e400` into Infinity (an `exp` that never passes) and replaces invalid UTF-8 with U+FFFD. A header
 * with `crit` names an extension we do not implement (RFC 7515 section 4.1.11; fast-jwt lets
 * `"crit": null` through): refused whatever its value.
 */
function strictSegments(token: string): boolean {
  const [head, body] = token.split('.');
  try {
    const header = parseJson(Buffer.from(head!, 'base64url'), { maxDepth: 32 });
    parseJson(Buffer.from(body!, 'base64url'), { maxDepth: 32 });
    return isJsonObject(header) && !Object.hasOwn(header, 'crit');
  } catch {
    return false;
  }
}

/**
 * Longest sub, team or agent accepted, in UTF-16 code units. At most the approval store's LIMITS.name
 * (512 characters; test/http/auth.test.ts checks it): with the checks below, every identity that
 * authenticates can be stored as a requester or an approver, so the approval routes never fail
 * later on the token's claims.
 */
export const MAX_CLAIM_LENGTH = 256;

/**
 * SPEC section 5: user = sub, team/agent/roles from the configured claims. An absent team or agent
 * is a caller without one (rules naming teams do not match it); a claim of the wrong type is 401,
 * never coerced. Identity strings hold no control characters (U+0000 cannot even be stored) and no
 * lone surrogates: such a token is refused here, naming the claim and never its value, instead of
 * failing later as a 500 or as an error that blames the body.
 */
export function identityFromClaims(payload: unknown, claims: Config['claims']): Identity {
  if (payload === null || typeof payload !== 'object') throw new HttpError('unauthorized', 'the token has no claims');
  const p = payload as Record<string, unknown>;
  const sub = p.sub;
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > MAX_CLAIM_LENGTH) {
    throw new HttpError('unauthorized', `the token needs a string \`sub\` of 1 to ${MAX_CLAIM_LENGTH} characters`);
  }
  checkClaimText('sub', sub);
  const optional = (name: string): string | null => {
    if (!Object.hasOwn(p, name) || p[name] === undefined) return null;
    const v = p[name];
    if (typeof v !== 'string' || v.length === 0 || v.length > MAX_CLAIM_LENGTH) {
      throw new HttpError('unauthorized', `the claim "${name}" must be a non-empty string of at most ${MAX_CLAIM_LENGTH} characters`);
    }
    checkClaimText(name, v);
    return v;
  };
  const team = optional(claims.team);
  const agent = optional(claims.agent);
  let roles: string[] = [];
  if (Object.hasOwn(p, claims.roles)) {
    const r = p[claims.roles];
    if (!Array.isArray(r) || r.length > 100 || !r.every((x) => typeof x === 'string')) {
      throw new HttpError('unauthorized', `the claim "${claims.roles}" must be an array of strings`);
    }
    for (const role of r as string[]) checkClaimText(claims.roles, role);
    roles = [...(r as string[])];
  }
  return Object.freeze({ user: sub, team, agent, roles: Object.freeze(roles) });
}

// Cc: C0 controls (U+0000–U+001F), DEL and C1 controls (U+007F–U+009F).
const CONTROL = /\p{Cc}/u;

function checkClaimText(name: string, value: string): void {
  if (CONTROL.test(value)) throw new HttpError('unauthorized', `the claim "${name}" contains a control character`);
  if (!isWellFormed(value)) throw new HttpError('unauthorized', `the claim "${name}" contains a lone surrogate`);
}

/**
 * A route's onRequest hook requiring one of `roles` (403 otherwise), run right after authentication:
 * before the body is parsed or validated, so a caller without the role learns nothing about what a
 * valid body would be. Roles match by exact element equality: no case folding, no prefixes. No
 * roles at all: nobody passes.
 */
export function requireRole(...roles: readonly string[]) {
  const needed = roles.length === 1 ? `the role "${roles[0]}"` : `one of the roles ${roles.map((r) => `"${r}"`).join(', ')}`;
  const forbidden = `this needs ${needed}`;
  return (request: FastifyRequest, _reply: unknown, done: (err?: Error) => void): void => {
    const held = (request.identity as Identity).roles;
    done(roles.some((role) => held.includes(role)) ? undefined : new HttpError('forbidden', forbidden));
  };
}
