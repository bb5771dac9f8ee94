// The hook's fetch over node:http (src/client/node-http.ts): what the transport reads of an answer,
// and every way an exchange can fail without an answer, against a local server.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeHttpFetch } from '../../src/client/node-http.js';

let server: Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
  server = undefined;
});

async function serve(listener: RequestListener): Promise<string> {
  server = createServer(listener);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const init = (o: { body?: string | null; signal?: AbortSignal } = {}) => ({
  method: 'POST' as const,
  headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
  body: o.body === undefined ? '{"tool":"x"}' : o.body,
  signal: o.signal ?? AbortSignal.timeout(5_000),
  redirect: 'error' as const,
});

describe('nodeHttpFetch', () => {
  it('sends the method, headers and body (with its length) and reads status, headers and text', async () => {
    let seen: { method?: string; headers?: Record<string, unknown>; body?: string } = {};
    const url = await serve((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        seen = { method: req.method, headers: req.headers, body };
        res.writeHead(403, { 'content-type': 'application/json', 'retry-after': '3' });
        res.end('{"decision":"deny","message":"é"}');
      });
    });
    const res = await nodeHttpFetch(`${url}/decide`, init());
    expect(seen).toMatchObject({
      method: 'POST',
      body: '{"tool":"x"}',
      headers: { authorization: 'Bearer t', 'content-length': '12' },
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('Content-Type')).toBe('application/json');
    expect(res.headers.get('Retry-After')).toBe('3');
    expect(res.headers.get('x-absent')).toBeNull();
    expect(await res.text()).toBe('{"decision":"deny","message":"é"}');
  });

  it('never follows a redirect: a 3xx is answered as it is (the transport refuses it)', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(302, { location: 'http://127.0.0.1:1/decide' });
      res.end();
    });
    expect((await nodeHttpFetch(`${url}/decide`, init({ body: null }))).status).toBe(302);
  });

  it('rejects an answer cut short, a refused connection, an aborted exchange and a URL that is not http(s)', async () => {
    const url = await serve((req, res) => {
      if (req.url === '/cut') {
        res.writeHead(200, { 'content-length': '100' });
        res.write('{"decision":');
        setTimeout(() => res.destroy(), 20);
      } // anything else: never answered
    });
    await expect(nodeHttpFetch(`${url}/cut`, init())).rejects.toThrow(/aborted|cut short/);
    await expect(nodeHttpFetch('http://127.0.0.1:1/decide', init())).rejects.toThrow(/ECONNREFUSED/); // nothing listens on port 1
    const aborted = new AbortController();
    const pending = nodeHttpFetch(`${url}/silent`, init({ signal: aborted.signal }));
    aborted.abort();
    await expect(pending).rejects.toThrow();
    await expect(nodeHttpFetch('ftp://127.0.0.1/decide', init())).rejects.toThrow(/not an http\(s\) URL/);
  });
});
