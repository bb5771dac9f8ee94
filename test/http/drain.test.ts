// Shutting down: a request that arrives after app.close() began, on a keep-alive connection that was
// busy then (only idle connections are closed), is answered 503 problem+json with Retry-After and
// `Connection: close`, before authentication or any route runs; the request in flight is answered
// in full. A connection with no request in flight (idle, or only part of a request's headers sent)
// is closed at once and never holds the close. (The process side, exit code 0 with such a
// connection open at SIGTERM, is in lifecycle.test.ts.)
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { agentToken, createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let port: number;

async function listeningApp(): Promise<{ t: TestApp; port: number }> {
  const app = await createTestApp();
  await app.app.listen({ host: '127.0.0.1', port: 0 });
  return { t: app, port: (app.app.server.address() as { port: number }).port };
}

beforeAll(async () => {
  ({ t, port } = await listeningApp());
});
afterAll(() => t.close());

function request(body: string, headers: Record<string, string>): string {
  const lines = Object.entries({
    host: 'localhost',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  }).map(([k, v]) => `${k}: ${v}`);
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

/** Resolves once the socket is closed (by either side); fails the test after ms. */
function closedWithin(socket: Socket, ms: number, what: string): Promise<void> {
  if (socket.destroyed) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} was not closed within ${ms} ms`)), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * Opens connections to a fresh listening app, and destroys whatever is left of them afterwards (so a
 * failing test does not leave app.close() waiting for a request that never finishes).
 */
async function withApp(
  fn: (app: TestApp, open: () => Promise<{ socket: Socket; received: () => string }>) => Promise<void>,
): Promise<void> {
  const { t: app, port: at } = await listeningApp();
  const sockets: Socket[] = [];
  const open = async (): Promise<{ socket: Socket; received: () => string }> => {
    const socket = connect(at, '127.0.0.1');
    sockets.push(socket);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', () => undefined); // a reset is the server closing it
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    return { socket, received: () => text };
  };
  try {
    await fn(app, open);
  } finally {
    for (const socket of sockets) socket.destroy();
    await app.close();
  }
}

const lookupBody = JSON.stringify({ tool: 'lookup_order', args: { order: 'A1' } });

test('closing: half-sent headers and idle connections are closed at once; the request in flight is still answered', async () => {
  await withApp(async (app, open) => {
    const partial = await open();
    // Part of a request line and headers, never finished.
    partial.socket.write('POST /decide HTTP/1.1\r\nHost: x\r\nContent-Ty');
    const idle = await open();
    // In flight: its headers are in (the 'request' event ran the hooks), its body is still arriving.
    const busy = await open();
    const first = request(lookupBody, {
      authorization: `Bearer ${agentToken()}`,
      'content-type': 'application/json',
      connection: 'close',
    });
    const cut = first.length - 5;
    const inFlight = new Promise<void>((resolve) => app.app.server.once('request', () => resolve()));
    busy.socket.write(first.slice(0, cut));
    await inFlight;
    // Written before the request in flight, so the server has read the half-sent headers by now
    // (had it not, the connection would be an idle one: closed too, the test would prove less).
    await new Promise((resolve) => setTimeout(resolve, 50));

    const closed = app.app.close();
    // Both are closed without waiting for the request in flight, which has not finished arriving.
    await Promise.all([
      closedWithin(partial.socket, 5_000, "the half-sent request's connection"),
      closedWithin(idle.socket, 5_000, 'the idle connection'),
    ]);
    expect(partial.received()).toBe(''); // no answer: nothing was accepted
    busy.socket.write(first.slice(cut));
    await closedWithin(busy.socket, 5_000, 'the answered connection');
    expect(busy.received()).toMatch(/^HTTP\/1\.1 200 [\s\S]*"decision":"allow"/);
    await closed;
  });
});

test('closing: a keep-alive connection whose request was in flight is closed once answered (the client need not hang up)', async () => {
  await withApp(async (app, open) => {
    const busy = await open();
    const keepAlive = request(lookupBody, {
      authorization: `Bearer ${agentToken()}`,
      'content-type': 'application/json',
    });
    const inFlight = new Promise<void>((resolve) => app.app.server.once('request', () => resolve()));
    busy.socket.write(keepAlive.slice(0, keepAlive.length - 5));
    await inFlight;
    const closed = app.app.close();
    busy.socket.write(keepAlive.slice(keepAlive.length - 5));
    await closedWithin(busy.socket, 5_000, 'the keep-alive connection');
    expect(busy.received()).toMatch(/^HTTP\/1\.1 200 [\s\S]*"decision":"allow"/);
    await closed;
  });
});
