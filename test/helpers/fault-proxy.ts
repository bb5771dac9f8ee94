// A loopback HTTP server, and a proxy in front of a real Gatehouse that injects the faults a client
// must survive: a 503 instead of the answer, or the answer lost on the way back after the server
// acted (the connection reset once the whole answer arrived from upstream).
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export async function startServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; server: Server; close: () => Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export type Fault = 'forward' | 'unavailable' | 'lose-answer';

/** Forwards to the app; `fault` picks, per request, a 503 instead, or the answer delivered to the app but lost on the way back. */
export async function startFaultProxy(url: string, fault: (req: IncomingMessage, body: string) => Fault) {
  const seen: { url: string; key: string | undefined; body: string }[] = [];
  let replayed = 0;
  const target = new URL(url);
  const s = await startServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const key = req.headers['idempotency-key'] as string | undefined;
      seen.push({ url: req.url ?? '', key, body });
      const what = fault(req, body);
      if (what === 'unavailable') {
        res.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' });
        res.end('{"code":"unavailable","status":503}');
        return;
      }
      const headers = { ...req.headers, host: target.host };
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on('data', (c: Buffer) => parts.push(c));
          answer.on('end', () => {
            if (what === 'lose-answer') return req.socket.destroy(); // the server acted; the client never hears
            if (answer.headers['idempotent-replayed'] === 'true') replayed++;
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            res.end(Buffer.concat(parts));
          });
        },
      );
      upstream.end(body);
    });
  });
  return {
    url: s.url,
    seen,
    get replayed() {
      return replayed;
    },
    close: () => {
      s.server.closeAllConnections();
      return s.close();
    },
  };
}
