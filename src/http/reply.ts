// Answers whose JSON carries a request's numbers: written as canonical JSON, so numbers come out as
// the request wrote them. Fastify's JSON.stringify would write the double instead (12345678901234567000
// for 12345678901234567890), and an operator or client would read a number the hash does not cover.
import type { FastifyReply } from 'fastify';
import { canonicalize } from '../json/canonical.js';
import type { JsonObject } from '../json/value.js';

export function sendCanonical(reply: FastifyReply, body: JsonObject, type = 'application/json; charset=utf-8'): FastifyReply {
  return reply.type(type).send(canonicalize(body));
}
