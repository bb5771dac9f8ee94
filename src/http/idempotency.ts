// The Idempotency-Key header (docs/spec.md section 5.3) as the routes read it: the claim the engine
// acts under (the table keeps what each key's act did: src/db/idempotency.ts).
import type { FastifyRequest } from 'fastify';
import { IDEMPOTENCY_KEY, type IdempotencyClaim, type IdempotentRoute } from '../engine/index.js';
import { canonicalize, sha256 } from '../json/canonical.js';
import type { JsonObject } from '../json/value.js';
import type { Identity } from '../policy/model.js';
import { HttpError } from './errors.js';
import { headerCount } from './headers.js';

/** The claim of this request's Idempotency-Key, or undefined without one; 400 for a malformed or repeated one. */
export function idempotencyClaim(
  request: FastifyRequest,
  route: IdempotentRoute,
  identity: Identity,
): IdempotencyClaim | undefined {
  const key = request.headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || headerCount(request.raw.rawHeaders, 'idempotency-key') > 1) {
    throw new HttpError('bad_request', 'send one Idempotency-Key header');
  }
  if (!IDEMPOTENCY_KEY.test(key))
    throw new HttpError('bad_request', 'an Idempotency-Key is 1 to 255 visible ASCII characters');
  // The body as parsed strictly, numbers as written: `150` and `150.0` are two bodies.
  return {
    sub: identity.user,
    route,
    key,
    bodyHash: sha256(canonicalize(request.body as JsonObject)),
    identityHash: identityDigest(identity),
  };
}

/**
 * The token's registered claims that say when it was issued, how long it lives and which token it
 * is (RFC 7519 section 4.1.4–4.1.7): a refreshed token of the same identity differs only in them, and
 * a retry may carry one. Every request is decided again on its own token, these claims included.
 */
const TOKEN_INSTANCE_CLAIMS: ReadonlySet<string> = new Set(['exp', 'nbf', 'iat', 'jti']);

/**
 * The SHA-256 of the identity a request was decided for: `sub`, team, agent, roles and every other
 * claim of its token (conditions read any of them) but those of TOKEN_INSTANCE_CLAIMS. A key's row
 * answers only the identity with this digest.
 */
export function identityDigest(identity: Identity): string {
  const claims: JsonObject = {};
  for (const [name, value] of Object.entries(identity.claims ?? {}))
    if (!TOKEN_INSTANCE_CLAIMS.has(name)) claims[name] = value;
  return sha256(
    canonicalize({
      user: identity.user,
      team: identity.team,
      agent: identity.agent,
      roles: [...identity.roles],
      claims,
    }),
  );
}
