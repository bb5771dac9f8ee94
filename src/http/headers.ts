// Header rules at the boundary: how many times a request repeats a header (a repeated Authorization
// or Content-Type is refused), and the headers every response carries.
import type { FastifyInstance } from 'fastify';

/**
 * How many times `name` (lower case) appears in Node's `rawHeaders` ([name, value, name, value…], as
 * sent). Node keeps only the first of a repeated Authorization or Content-Type and drops the rest; a
 * proxy in front may keep another, so the two would read different requests. Lengths are compared
 * first: only a name of the right length is lower-cased, no string per header per request.
 */
export function headerCount(rawHeaders: readonly string[], name: string): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const raw = rawHeaders[i]!;
    if (raw.length === name.length && raw.toLowerCase() === name) n++;
  }
  return n;
}

/**
 * Sent on every response. Answers carry requests' arguments (approvals, a require_approval decision,
 * an explain trace) and callers' identities: no cache, shared or private, may keep them (RFC 9111
 * section 5.2.2.5), and no browser may read a JSON body as another type (Fetch standard, "X-Content-
 * Type-Options"). The same two on every route keeps the rule one line, and costs two header writes.
 */
export const RESPONSE_HEADERS = Object.freeze({
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
});

/** The same headers as raw header lines, for answers written to the socket outside Fastify. */
export const RESPONSE_HEADER_LINES = Object.entries(RESPONSE_HEADERS)
  .map(([k, v]) => `${k}: ${v}\r\n`)
  .join('');

/** Adds RESPONSE_HEADERS to every reply, before any hook or handler can answer. */
export function registerResponseHeaders(app: FastifyInstance): void {
  // Callback style: no promise and no microtask turn per request.
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('cache-control', RESPONSE_HEADERS['cache-control']);
    reply.header('x-content-type-options', RESPONSE_HEADERS['x-content-type-options']);
    done();
  });
}
