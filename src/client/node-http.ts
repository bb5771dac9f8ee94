// A `fetch` for one short-lived process, over node:http(s): what `gatehouse hook claude-code` sends
// its few requests with. Node 20's global fetch loads undici on its first call, which costs more CPU
// than the rest of a hook process together (docs/performance.md, "The Claude Code hook"), and node:http
// a fraction of that. It does what the
// transport (./http.ts) asks of a fetch and no more: the whole answer is read before it resolves,
// redirects are never followed (a 3xx is answered as it is, which the transport refuses), and the
// signal aborts the exchange at any point.
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import type { Fetch, FetchResponse } from './http.js';

export const nodeHttpFetch: Fetch = async (url, init) => {
  const target = new URL(url);
  // node:https loads TLS: only for an https:// service.
  const request = target.protocol === 'https:' ? (await import('node:https')).request : target.protocol === 'http:' ? httpRequest : undefined;
  if (request === undefined) throw new TypeError(`not an http(s) URL: ${target.protocol}`);
  init.signal.throwIfAborted();
  const headers = init.body === null ? init.headers : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) };
  const options: RequestOptions = { method: init.method, headers, signal: init.signal };
  return new Promise<FetchResponse>((resolve, reject) => {
    const req = request(target, options, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      // An answer cut short (the connection closed mid-body) is no answer; after 'end' this is a no-op.
      res.on('close', () => {
        if (!res.complete) reject(new Error('the answer was cut short'));
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          headers: { get: (name) => headerOf(res, name) },
          text: async () => text,
        });
      });
    });
    req.on('error', reject);
    req.end(init.body ?? undefined);
  });
};

/** A header as fetch's Headers.get() gives it: repeated values joined with ", ", null when absent. */
function headerOf(res: IncomingMessage, name: string): string | null {
  const value = res.headers[name.toLowerCase()];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}
