// Connections against a real listening server (docs/operations.md "Connections and load balancers"): a client that sends its headers
// or its body a byte at a time cannot hold a connection past HEADERS_TIMEOUT / REQUEST_TIMEOUT (the
// server closes it), an approval long-poll longer than REQUEST_TIMEOUT is still answered (answering
// is not part of the request), an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT, and
// connections beyond MAX_CONNECTIONS are closed as they are accepted while the others keep working.
// The timeouts are set short here; each test waits for the server's close with a generous bound and
// never asserts how fast anything was.
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConnectionLimits } from '../../src/config.js';
import { agentToken, createTestApp, post, token, type TestApp } from '../helpers/app.js';

const SHORT: Partial<ConnectionLimits> = { headersTimeoutMs: 500, requestTimeoutMs: 1000, keepAliveTimeoutMs: 1000 };
/** Far above every configured timeout plus Node's 1 s checking interval: only a server that never closes misses it. */
const BOUND_MS = 10_000;

const opened: { t: TestApp; sockets: Socket[] }[] = [];
afterEach(async () => {
  for (const { t, sockets } of opened.splice(0)) {
    for (const s of sockets) s.destroy();
    await t.close();
  }
});

async function listening(
  options: Parameters<typeof createTestApp>[0],
): Promise<{ port: number; t: TestApp; sockets: Socket[] }> {
  const t = await createTestApp(options);
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const entry = { t, sockets: [] as Socket[] };
  opened.push(entry);
  return { port: (t.app.server.address() as { port: number }).port, ...entry };
}

/** A raw connection, with what the server sent and a promise of its close (by the server: the client never ends it). */
async function open(
  port: number,
  sockets: Socket[],
): Promise<{ socket: Socket; received: () => string; closed: Promise<void> }> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => undefined); // a reset is a close too
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, received: () => text, closed };
}

function within<T>(promise: Promise<T>, what: string, ms = BOUND_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

/** Writes one byte every `everyMs` until the socket closes; resolves with how many were written. */
function trickle(socket: Socket, byte: string, everyMs = 100): { stop: () => number } {
  let sent = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || !socket.writable) return;
    socket.write(byte);
    sent++;
  }, everyMs);
  return { stop: () => (clearInterval(timer), sent) };
}

/** The first response in `text`: status, lower-cased headers, body. */
function parseResponse(text: string): { status: number; headers: Record<string, string>; body: string } {
  const end = text.indexOf('\r\n\r\n');
  expect(end, text).toBeGreaterThan(0);
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  return { status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(end + 4, end + 4 + length) };
}

function expectTimedOut(text: string): void {
  const res = parseResponse(text);
  expect(res.status).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.headers['connection']).toBe('close');
  expect(JSON.parse(res.body)).toMatchObject({ code: 'bad_request', detail: 'the request was not received in time' });
}

const get = (path: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${extra}\r\n`;

describe('a slow client cannot stretch a request', () => {
  it('headers sent a byte at a time: the server closes the connection after HEADERS_TIMEOUT', async () => {
    const { port, sockets } = await listening({ connections: SHORT });
    const c = await open(port, sockets);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
    const drip = trickle(c.socket, 'a');
    await within(c.closed, 'the slowloris connection closed by the server');
    const sent = drip.stop();
    expect(sent).toBeGreaterThan(0); // it kept sending until the server hung up
    expectTimedOut(c.received());
  });

  it('a body sent a byte at a time: the server closes the connection after REQUEST_TIMEOUT', async () => {
    // The headers arrive at once (within HEADERS_TIMEOUT); the body never does.
    const { port, sockets } = await listening({ connections: SHORT });
    const c = await open(port, sockets);
    c.socket.write(
      `POST /decide HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${agentToken()}\r\n` +
        'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"tool":"lookup_order","args":{"note":"',
    );
    const drip = trickle(c.socket, 'x');
    await within(c.closed, "the dripping body's connection closed by the server");
    expect(drip.stop()).toBeGreaterThan(0);
    expectTimedOut(c.received());
  });

  it("waiting before the first byte buys no time: the first request's headers are due HEADERS_TIMEOUT after the connection opened", async () => {
    // Node's own clock starts at a request's first byte. Here the first byte comes at 90% of
    // HEADERS_TIMEOUT and the headers end at 180%: by Node's clock alone they would be in time (200);
    // counted from the connection's opening they are not (400, closed).
    const { port, sockets } = await listening({ connections: { headersTimeoutMs: 2000, requestTimeoutMs: 10_000 } });
    const c = await open(port, sockets);
    const later = (ms: number, text: string): Promise<void> =>
      new Promise((resolve) =>
        setTimeout(() => {
          if (c.socket.writable) c.socket.write(text);
          resolve();
        }, ms),
      );
    await later(1800, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
    await later(1800, 'Connection: close\r\n\r\n');
    await within(c.closed, 'the connection closed by the server');
    expectTimedOut(c.received());
  });

  it('a connection that sends nothing is closed after HEADERS_TIMEOUT, without an unsolicited answer', async () => {
    const { port, sockets } = await listening({ connections: SHORT });
    const c = await open(port, sockets);
    await within(c.closed, 'the silent connection closed by the server');
    expect(c.received()).toBe(''); // nothing asked, nothing answered
  });

  it('an approval long-poll longer than REQUEST_TIMEOUT is answered: only receiving the request is timed', async () => {
    const { port, sockets, t } = await listening({ database: true, env: 'prod', connections: SHORT });
    const agent = token({ sub: 'long-poller', team: 'support', agent: 'bot' });
    const created = await post(
      t.app,
      '/approvals',
      { tool: 'refund', args: { order: 'LP-1', amount: 120, note: 'n' } },
      agent,
    );
    expect(created.statusCode, created.body).toBe(201);
    const { id } = created.json() as { id: string };
    const c = await open(port, sockets);
    // wait=3: past REQUEST_TIMEOUT (1 s) plus Node's checking interval (1 s); nobody grants it meanwhile.
    c.socket.write(get(`/approvals/${id}?wait=3`, `Authorization: Bearer ${agent}\r\nConnection: close\r\n`));
    await within(c.closed, 'the long-poll answered');
    const res = parseResponse(c.received());
    expect(res.status, c.received()).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ id, status: 'pending' });
  });

  it('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT, after its answer', async () => {
    const { port, sockets } = await listening({ connections: SHORT });
    const c = await open(port, sockets);
    c.socket.write(get('/healthz'));
    await within(c.closed, 'the idle keep-alive connection closed by the server');
    const res = parseResponse(c.received());
    expect(res.status).toBe(200);
    expect(res.headers['keep-alive']).toBe('timeout=1');
  });
});

describe('MAX_CONNECTIONS', () => {
  it('a connection beyond the cap is closed unanswered; the open ones keep working, and a place frees up when one closes', async () => {
    // Long timeouts: nothing but the cap closes a connection here.
    const { port, sockets, t } = await listening({ connections: { maxConnections: 2 } });
    const ask = async (c: Awaited<ReturnType<typeof open>>): Promise<number> => {
      const before = c.received().length;
      c.socket.write(get('/healthz'));
      await within(
        new Promise<void>((resolve) => {
          const check = (): void => {
            if (c.received().slice(before).includes('{"status":"ok"}')) resolve();
            else c.socket.once('data', check);
          };
          check();
        }),
        'an answer',
      );
      return parseResponse(c.received().slice(before)).status;
    };
    const a = await open(port, sockets);
    const b = await open(port, sockets);
    expect(await ask(a)).toBe(200);
    expect(await ask(b)).toBe(200);

    const third = await open(port, sockets);
    third.socket.write(get('/healthz'));
    await within(third.closed, 'the connection over the cap closed by the server');
    expect(third.received()).toBe('');

    expect(await ask(a)).toBe(200);
    expect(await ask(b)).toBe(200);

    // Once the server has seen b close, a new connection is accepted again.
    b.socket.destroy();
    await within(
      (async () => {
        for (;;) {
          const n = await new Promise<number>((resolve, reject) =>
            t.app.server.getConnections((err, count) => (err ? reject(err) : resolve(count))),
          );
          if (n < 2) return;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })(),
      'the server counting one connection',
    );
    const d = await open(port, sockets);
    expect(await ask(d)).toBe(200);
  });
});
