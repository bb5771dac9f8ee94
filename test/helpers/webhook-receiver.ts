// A webhook receiver on 127.0.0.1, as a customer would write one: a node:http server that verifies
// every Standard Webhooks signature with the `standardwebhooks` package (Webhook.verify), records what
// arrived, and answers what the test says (2xx, an error status, or nothing at all). It can be
// stopped and started again on the same port: a receiver that is down, then back.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed body, when the signature verified (or the receiver checks none). */
  payload: unknown;
  /** Whether Webhook.verify accepted it (null: this receiver has no secret). */
  verified: boolean | null;
  /** The status this receiver answered. */
  answered: number | null;
  at: number;
}

/** A Standard Webhooks secret: whsec_ and the base64 of 32 random bytes. */
export function webhookSecret(): string {
  return `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')}`;
}

export interface WebhookReceiver {
  url: string;
  port: number;
  /** Every request that arrived, in order (also the ones answered with an error). */
  received: ReceivedWebhook[];
  /** The ones answered 2xx. */
  delivered(): ReceivedWebhook[];
  /** The status to answer next (default 204), or 'hang' to answer nothing until closed. */
  answer: number | 'hang';
  /** Wait this long before answering (default 0). */
  delayMs: number;
  /** Stops listening and drops every open connection: the receiver is down. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** `secret`: verify signatures with it; null: a receiver that checks none (a Slack stand-in). `port`: where to listen (default any). */
export async function startWebhookReceiver(secret: string | null, port = 0): Promise<WebhookReceiver> {
  const verifier = secret === null ? null : new Webhook(secret);
  let server: Server | null = null;
  const receiver: WebhookReceiver = {
    url: '',
    port,
    received: [],
    delivered: () => receiver.received.filter((r) => r.answered !== null && r.answered >= 200 && r.answered < 300),
    answer: 204,
    delayMs: 0,
    async stop() {
      const s = server;
      server = null;
      if (s === null) return;
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    },
    async start() {
      if (server !== null) return;
      const s = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          let verified: boolean | null = null;
          let payload: unknown = null;
          if (verifier !== null) {
            try {
              payload = verifier.verify(body, req.headers as Record<string, string>);
              verified = true;
            } catch {
              verified = false;
            }
          } else payload = JSON.parse(body);
          const record: ReceivedWebhook = {
            headers: req.headers,
            body,
            payload,
            verified,
            answered: null,
            at: Date.now(),
          };
          receiver.received.push(record);
          const status = receiver.answer;
          if (status === 'hang') return;
          const answer = (): void => {
            // A bad signature is refused, as a real receiver does.
            record.answered = verified === false ? 401 : status;
            res.writeHead(record.answered).end();
          };
          if (receiver.delayMs > 0) setTimeout(answer, receiver.delayMs);
          else answer();
        });
      });
      await new Promise<void>((resolve, reject) => {
        s.once('error', reject);
        s.listen(receiver.port, '127.0.0.1', () => resolve());
      });
      server = s;
      receiver.port = (s.address() as AddressInfo).port;
      receiver.url = `http://127.0.0.1:${receiver.port}/hooks/gatehouse`;
    },
    close: () => receiver.stop(),
  };
  await receiver.start();
  return receiver;
}
