// Shutting down: a request that arrives after app.close() began, on a keep-alive connection that was
// busy then (only idle connections are closed), is answered 503 problem+json with Retry-After and
// `Connection: close`, before authentication or any route runs; the request in flight is answered
// in full.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { agentToken, createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let port: number;

beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.server.address() as { port: number }).port;
});
afterAll(() => t.close());

function request(body: string, headers: Record<string, string>): string {
  const lines = Object.entries({ host: 'localhost', 'content-length': String(Buffer.byteLength(body)), ...headers }).map(([k, v]) => `${k}: ${v}`);
  return `POST /decide HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${body}`;
}

/** Reads until the server closes the connection. */
function readAll(socket: Socket): Promise<string> {
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  return new Promise((resolve, reject) => {
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

test('the request in flight is answered; the next one on its connection gets 503 problem+json with Retry-After', async () => {
  const socket = connect(port, '127.0.0.1');
  const all = readAll(socket);
  const body = JSON.stringify({ tool: 'lookup_order', args: { order: 'A1' } });
  const headers = { authorization: `Bearer ${agentToken()}`, 'content-type': 'application/json' };
  const first = request(body, headers);
  const cut = first.length - 5; // all but the last bytes of the body: the request is in flight

  // Node emits 'request' once the headers are in; Fastify's listener, registered first, has run the
  // (synchronous) onRequest hooks by the time this one runs: the request is in, waiting for its body.
  const inFlight = new Promise<void>((resolve) => t.app.server.once('request', () => resolve()));
  socket.write(first.slice(0, cut));
  await inFlight;
  const closed = t.app.close();
  // The rest of the first request and, pipelined behind it, a second one (without a token: the
  // drain answer comes before authentication).
  socket.write(first.slice(cut) + request(body, { 'content-type': 'application/json' }));

  const text = await all;
  await closed;
  const responses = text.split(/(?=HTTP\/1\.1 )/);
  expect(responses).toHaveLength(2);
  const [answered, drained] = responses as [string, string];
  expect(answered).toMatch(/^HTTP\/1\.1 (200|403) /);
  expect(answered).toMatch(/"decision":"(allow|deny|abort|require_approval)"/);

  expect(drained).toMatch(/^HTTP\/1\.1 503 /);
  expect(drained).toMatch(/\r\ncontent-type: application\/problem\+json/i);
  expect(drained).toMatch(/\r\nretry-after: 1\r\n/i);
  expect(drained).toMatch(/\r\nconnection: close\r\n/i);
  const problem = JSON.parse(drained.slice(drained.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
  expect(problem).toMatchObject({ status: 503, code: 'unavailable' });
  expect(problem).not.toHaveProperty('decision');
});
