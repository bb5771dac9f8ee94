// The delivery worker, one per replica (docs/spec.md section 5.8): claims due outbox rows, posts
// each to its endpoint (signed per Standard Webhooks, or as a Slack message), and records the
// outcome: delivered on a 2xx; otherwise retried with exponential backoff and jitter until the
// retry window is over, then failed.
//
// - Woken at once by the NOTIFY of a transition that queued events (on any replica), and every
//   pollMs for retries that come due and notifications that were missed.
// - Off the request path: its own statements go through the pool it is given (src/service.ts gives
//   it one of its own), and an HTTP call never holds a database connection or a transaction.
// - close() stops claiming and waits for the attempts in flight (each bounded by timeoutMs), so a
//   clean shutdown records every attempt it made; a row leased by a process that died is claimed
//   again when its lease runs out.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Logger } from 'pino';
import type { Sql } from 'postgres';
import { Webhook } from 'standardwebhooks';
import { slackBody, standardBody, type WebhookEndpoint } from './events.js';
import { WEBHOOKS_CHANNEL, type ClaimedDelivery, type Outbox } from './outbox.js';

/** What an attempt came to: delivered, failed with another attempt to come (`pending`), or failed for good. */
export type DeliveryOutcome = 'delivered' | 'pending' | 'failed';

export interface WebhookWorkerOptions {
  readonly endpoints: readonly WebhookEndpoint[];
  /** WEBHOOK_TIMEOUT: one attempt, connecting to the end of the answer. */
  readonly timeoutMs: number;
  /** WEBHOOK_RETRY_FOR: how long after the event attempts go on; the last one is at its end. */
  readonly retryForMs: number;
  /** WEBHOOK_RETRY_MIN / WEBHOOK_RETRY_MAX: the first pause between attempts, doubling up to the longest. */
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  /** How often due rows are looked for without a notification. Default 1000 ms. */
  readonly pollMs?: number;
  /** Rows claimed (and attempts in flight) at once. Default 16. */
  readonly batch?: number;
  /** How often the housekeeping runs. Default 60 s. */
  readonly housekeepMs?: number;
  /** Delivered rows are deleted this long after delivery. Default 7 days. */
  readonly keepDeliveredMs?: number;
  /** Failed rows are deleted this long after their event. Default 30 days. */
  readonly keepFailedMs?: number;
  readonly log?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Each attempt's outcome (the metrics count them). */
  readonly onOutcome?: (endpoint: string, outcome: DeliveryOutcome) => void;
  /** Whether the migrations have been applied (src/service.ts retries them while the database is down). */
  readonly schemaReady?: () => boolean;
  /** The jitter's source, in [0, 1). Default Math.random. */
  readonly random?: () => number;
}

export interface WebhookWorker {
  /** Starts polling and listening. */
  start(): void;
  /** Looks for due rows now. */
  wake(): void;
  /** Stops claiming; resolves once the attempts in flight are recorded. */
  close(): Promise<void>;
}

export const DAY_MS = 86_400_000;

/**
 * The pause after the `attempts`-th failed attempt: retryMin doubling per attempt, capped at
 * retryMax, then jittered to 50–100 % of that ("equal jitter"), so receivers coming back are not
 * hit by every replica's retries at the same instant.
 */
export function retryDelayMs(
  attempts: number,
  retryMinMs: number,
  retryMaxMs: number,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempts - 1, 0), 40);
  const base = Math.min(retryMaxMs, retryMinMs * 2 ** exponent);
  return base / 2 + (random() * base) / 2;
}

export function createWebhookWorker(
  outbox: Outbox,
  listenOn: Sql | null,
  options: WebhookWorkerOptions,
): WebhookWorker {
  const { endpoints, timeoutMs, retryForMs, retryMinMs, retryMaxMs } = options;
  const pollMs = options.pollMs ?? 1000;
  const batch = options.batch ?? 16;
  const random = options.random ?? Math.random;
  const schemaReady = options.schemaReady ?? (() => true);
  const names = endpoints.map((e) => e.name);
  const byName = new Map(endpoints.map((e) => [e.name, e]));
  // Made once: the secret is decoded and checked when the configuration loads (config.ts).
  const signers = new Map(endpoints.filter((e) => e.secret !== null).map((e) => [e.name, new Webhook(e.secret!)]));
  // A claim must outlive the attempt and its recording, or another worker would send it again.
  const leaseMs = timeoutMs + 60_000;
  const log = options.log;

  let closed = false;
  let started = false;
  let ticking: Promise<void> | null = null;
  let again = false;
  let unreachable = false;
  const timers: NodeJS.Timeout[] = [];
  let listening: Promise<{ unlisten(): Promise<void> } | null> = Promise.resolve(null);

  const tick = (): void => {
    if (closed || !schemaReady()) return;
    if (ticking !== null) {
      again = true; // a notification during a round: one more round after it
      return;
    }
    ticking = (async () => {
      do {
        again = false;
        let claimed: ClaimedDelivery[];
        try {
          claimed = await outbox.claim(names, batch, leaseMs);
          if (unreachable) log?.info('webhook outbox reachable again: delivering');
          unreachable = false;
        } catch (err) {
          if (!unreachable)
            log?.warn({ err }, 'webhook outbox unreachable: deliveries wait until the database answers');
          unreachable = true;
          return;
        }
        await Promise.all(claimed.map(attempt));
        if (claimed.length === batch) again = true; // more may be due
      } while (again && !closed);
    })().finally(() => {
      ticking = null;
    });
  };

  async function attempt(row: ClaimedDelivery): Promise<void> {
    const endpoint = byName.get(row.endpoint)!; // claim() takes only these endpoints' rows
    let status: number | null = null;
    let error: string;
    try {
      status = await post(endpoint, row, signers.get(endpoint.name) ?? null, timeoutMs);
      error = `the receiver answered HTTP ${status}`;
    } catch (err) {
      error = describe(err, timeoutMs);
    }
    try {
      if (status !== null && status >= 200 && status < 300) {
        await outbox.delivered(row.id, status);
        options.onOutcome?.(endpoint.name, 'delivered');
        return;
      }
      const delayMs = retryDelayMs(row.attempts, retryMinMs, retryMaxMs, random);
      const answered = status !== null && status >= 100 && status <= 599 ? status : null;
      const now = await outbox.attemptFailed(row.id, { status: answered, error, delayMs, retryForMs });
      if (now === null) return;
      options.onOutcome?.(endpoint.name, now);
      if (now === 'failed') {
        log?.warn(
          {
            endpoint: endpoint.name,
            webhook_id: row.id,
            approval_id: row.approvalId,
            type: row.type,
            attempts: row.attempts,
            error,
          },
          'webhook delivery failed: its retry window is over',
        );
      }
    } catch (err) {
      // The database did not take the outcome: the lease runs out and the row is attempted again
      // (a receiver that got it sees the same webhook-id twice: at least once).
      log?.warn(
        { err, endpoint: endpoint.name, webhook_id: row.id },
        'webhook attempt not recorded; it will be attempted again',
      );
    }
  }

  const housekeep = (): void => {
    if (closed || !schemaReady()) return;
    outbox
      .housekeep({
        names,
        retryForMs,
        keepDeliveredMs: options.keepDeliveredMs ?? 7 * DAY_MS,
        keepFailedMs: options.keepFailedMs ?? 30 * DAY_MS,
      })
      .then(({ failed }) => {
        for (const f of failed) {
          log?.warn(
            { endpoint: f.endpoint, count: f.count },
            'webhook deliveries failed: no endpoint of this name is configured',
          );
        }
      })
      .catch(() => undefined); // a down database: the claims report it
  };

  return {
    start() {
      if (started || closed) return;
      started = true;
      timers.push(setInterval(tick, pollMs), setInterval(housekeep, options.housekeepMs ?? 60_000));
      for (const t of timers) t.unref();
      if (listenOn !== null && endpoints.length > 0) {
        // postgres.js re-listens after a reconnect and calls the second callback each time: look then too.
        listening = listenOn.listen(WEBHOOKS_CHANNEL, tick, tick).then(
          (meta) => meta,
          () => null, // unreachable database: the polls still run
        );
      }
      tick();
      housekeep();
    },
    wake: tick,
    async close() {
      closed = true;
      for (const t of timers) clearInterval(t);
      const meta = await listening;
      await meta?.unlisten().catch(() => undefined);
      await ticking;
    },
  };
}

/** POSTs the event; resolves with the receiver's HTTP status as soon as it answers (its body is discarded). */
function post(
  endpoint: WebhookEndpoint,
  row: ClaimedDelivery,
  signer: Webhook | null,
  timeoutMs: number,
): Promise<number> {
  const body = endpoint.format === 'slack' ? slackBody(row) : standardBody(row);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'user-agent': 'Gatehouse-Webhooks',
  };
  if (signer !== null) {
    // https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
    const now = new Date();
    headers['webhook-id'] = row.id;
    headers['webhook-timestamp'] = String(Math.floor(now.getTime() / 1000));
    headers['webhook-signature'] = signer.sign(row.id, now, body);
  }
  const url = new URL(endpoint.url);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<number>((resolve, reject) => {
    // agent: false: one connection per attempt, closed after it; a redirect is an answer like any
    // other non-2xx (node:http never follows one).
    const req = send(url, { method: 'POST', headers, agent: false }, (res) => {
      resolve(res.statusCode ?? 0);
      res.resume(); // the answer's body is not read; a body that never ends is cut by the timer
      res.once('error', () => undefined);
    });
    const timer = setTimeout(() => req.destroy(new AttemptTimeout()), timeoutMs);
    req.once('error', reject);
    req.once('close', () => clearTimeout(timer));
    req.end(body);
  });
}

class AttemptTimeout extends Error {
  constructor() {
    super('timeout');
    this.name = 'AttemptTimeout';
  }
}

/** Why an attempt got no answer, in words that never hold the URL (a Slack URL's path is its secret). */
function describe(err: unknown, timeoutMs: number): string {
  if (err instanceof AttemptTimeout) return `no answer within ${timeoutMs} ms`;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? `no answer: ${code}` : 'no answer: the connection failed';
}
