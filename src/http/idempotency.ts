// The Idempotency-Key header (docs/spec.md section 5.3) as the routes read it, and a kept answer as
// they send it again. The store keeps the answers (src/approvals/idempotency.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { IDEMPOTENCY_KEY, type IdempotencyClaim, type IdempotentRoute, type StoredAnswer } from '../approvals/idempotency.js';
import { canonicalize, sha256 } from '../json/canonical.js';
import type { JsonObject } from '../json/value.js';
import type { Identity } from '../policy/model.js';
import { HttpError } from './errors.js';
import { headerCount } from './headers.js';

/** The claim of this request's Idempotency-Key, or undefined without one; 400 for a malformed or repeated one. */
export function idempotencyClaim(request: FastifyRequest, route: IdempotentRoute, identity: Identity): IdempotencyClaim | undefined {
  const key = request.headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || headerCount(request.raw.rawHeaders, 'idempotency-key') > 1) {
    throw new HttpError('bad_request', 'send one Idempotency-Key header');
  }
  if (!IDEMPOTENCY_KEY.test(key)) throw new HttpError('bad_request', 'an Idempotency-Key is 1 to 255 visible ASCII characters');
  // The body as parsed strictly, numbers as written: `150` and `150.0` are two bodies.
  return { sub: identity.user, route, key, bodyHash: sha256(canonicalize(request.body as JsonObject)) };
}

/** What is kept for a key: the answers that say what became of the request. A 429 or a 5xx is not: the retry acts afresh. */
export function keptStatus(status: number): boolean {
  return status >= 200 && status < 500 && status !== 429;
}

/** Sends an answer (new or kept); a kept one says so in `Idempotent-Replayed`. */
export function sendAnswer(reply: FastifyReply, answer: StoredAnswer & { replayed: boolean }): FastifyReply {
  if (answer.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(answer.status).type('application/json; charset=utf-8').send(answer.body);
}
