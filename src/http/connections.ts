// How the app treats connections rather than requests: the drain on shutdown, the first request's
// headers deadline, and the answer to an Expect Node would otherwise give itself.
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ERRORS, HttpError, answerClientError, problemOf, sendProblem } from './errors.js';
import { RESPONSE_HEADERS } from './headers.js';

/**
 * Shutting down (docs/operations.md "Shutdown"): requests in flight are answered in full, and nothing else
 * holds app.close(). Once it has begun:
 * - a connection with no request being answered is closed at once: an idle keep-alive one, and one
 *   that has sent only part of a request's headers (Node's closeIdleConnections() keeps those, and
 *   app.close() would then wait, up to SHUTDOWN_GRACE_MS, for whatever the client sends next). Such a
 *   request has not been accepted: no hook or handler has run for it, and its client retries elsewhere;
 * - a request whose headers had arrived is in flight, even while its body is still arriving (it was
 *   authenticated, the client is sending it): it is answered, then its connection is closed (a
 *   keep-alive client need not hang up for the shutdown to end);
 * - a request that still arrives behind it on the same connection is answered 503 problem+json with
 *   Retry-After and `Connection: close`, before authentication or any route runs: nothing is decided
 *   by a process on its way out.
 * Its onRequest hook also answers an HTTP/1.1 request without Host (RFC 9112 section 3.2) 400
 * problem+json, where Node would send a bare 400: one hook for both early answers.
 * Returns the open connections, each with the response it is answering last (null before its first).
 */
export function registerDrain(app: FastifyInstance): ReadonlyMap<Socket, ServerResponse | null> {
  let closing = false;
  // Each open connection with the response it is answering last (null before its first request).
  // Node answers a connection's requests in order, so that response finished means all have: the
  // connection is idle, or holds only part of a request. One Map write per request, no closure.
  // inject() opens no connection: this only concerns a listening server.
  const latest = new Map<Socket, ServerResponse | null>();
  app.server.on('connection', (socket: Socket) => {
    if (closing) {
      socket.destroy();
      return;
    }
    latest.set(socket, null);
    socket.once('close', () => latest.delete(socket));
  });
  app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (latest.has(request.socket)) latest.set(request.socket, response);
  });
  app.addHook('preClose', (done) => {
    closing = true;
    for (const [socket, response] of latest) {
      if (response === null || response.writableFinished) socket.destroy();
      // The answer is written: end the connection after it (destroySoon flushes first).
      else response.once('close', () => socket.destroySoon());
    }
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (closing) {
      reply.header('connection', 'close');
      sendProblem(reply, new HttpError('unavailable', 'the service is shutting down; retry', { retryAfterSec: 1 }));
    } else if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      // Node's own check is off (`requireHostHeader: false` above) so that this answer is problem+json.
      reply.header('connection', 'close');
      sendProblem(reply, new HttpError('bad_request', 'an HTTP/1.1 request needs a Host header'));
    } else {
      done();
    }
  });
  return latest;
}

/**
 * A new connection's first request must have all its headers HEADERS_TIMEOUT after the connection
 * opened. Node starts that clock at the request's first byte, so a client that waited almost that
 * long before sending one byte would get twice as long. (Between later requests a connection is
 * idle, bounded by KEEP_ALIVE_TIMEOUT, and each request by Node's own clock.) One timer per
 * connection, none per request: `connections` already records each connection's first request.
 */
export function registerFirstHeadersDeadline(
  app: FastifyInstance,
  connections: ReadonlyMap<Socket, ServerResponse | null>,
  ms: number,
): void {
  app.server.on('connection', (socket: Socket) => {
    if (socket.destroyed) return; // refused by the drain
    const timer = setTimeout(() => {
      if (connections.get(socket) === null) answerClientError(new RequestTimeoutError(), socket);
    }, ms);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
}

/** What Node's own check raises when a request is not received in time. */
class RequestTimeoutError extends Error {
  readonly code = 'ERR_HTTP_REQUEST_TIMEOUT';
  constructor() {
    super('the request was not received in time');
  }
}

/**
 * An Expect other than `100-continue` (RFC 9110 section 10.1.1) gets problem+json like every other
 * error: Node emits 'checkExpectation' instead of 'request' for it, so Fastify never sees the request,
 * and without a listener Node answers a bare 417. RFC 9110 leaves 417 optional ("MAY"); 400 keeps to
 * the error catalogue. (A missing Host, the other request Node would answer itself: registerDrain.)
 */
export function registerExpectRefusal(app: FastifyInstance): void {
  app.server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    const { status } = ERRORS.bad_request;
    const body = JSON.stringify(problemOf('bad_request', 'Expect: only 100-continue is supported'));
    // The body of the request is never read: the connection cannot be reused.
    response.writeHead(status, STATUS_CODES[status], {
      ...RESPONSE_HEADERS,
      'content-type': 'application/problem+json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
    });
    response.end(body);
  });
}
