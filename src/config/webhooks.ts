// WEBHOOKS and how they are delivered (docs/configuration.md, docs/spec.md section 5.8).
import { parseJson } from '../json/parse.js';
import { isJsonObject, type JsonValue } from '../json/value.js';
import {
  WEBHOOK_EVENT_TYPES,
  type WebhookEndpoint,
  type WebhookEventType,
  type WebhookFormat,
} from '../webhooks/events.js';
import { isLoopbackHost } from './jwt.js';
import type { Reader } from './read.js';

/** WEBHOOKS and how they are delivered (docs/spec.md section 5.8). */
export interface WebhookSettings {
  /** Empty when WEBHOOKS is unset. */
  readonly endpoints: readonly WebhookEndpoint[];
  /** WEBHOOK_TIMEOUT: one attempt. */
  readonly timeoutMs: number;
  /** WEBHOOK_RETRY_FOR: attempts go on this long after the event, then it is marked failed. */
  readonly retryForMs: number;
  /** WEBHOOK_RETRY_MIN / WEBHOOK_RETRY_MAX: the first pause between attempts, and the longest. */
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
}

export function webhookSettings(read: Reader, production: boolean): WebhookSettings {
  const { str, duration, problems } = read;
  const endpoints = webhookEndpoints(str('WEBHOOKS'), production, problems);
  const retryMinMs = duration('WEBHOOK_RETRY_MIN', '5s', { min: '1ms', max: '1h' });
  const retryMaxMs = duration('WEBHOOK_RETRY_MAX', '1h', { min: '1ms', max: '24h' });
  if (retryMinMs > retryMaxMs) problems.push('WEBHOOK_RETRY_MIN must not be longer than WEBHOOK_RETRY_MAX');
  return {
    endpoints,
    timeoutMs: duration('WEBHOOK_TIMEOUT', '5s', { min: '1s', max: '60s' }),
    retryForMs: duration('WEBHOOK_RETRY_FOR', '24h', { min: '1s', max: '30d' }),
    retryMinMs,
    retryMaxMs,
  };
}

const WEBHOOK_KEYS = ['url', 'secret', 'format', 'events', 'name'] as const;
const WEBHOOK_FORMATS: readonly WebhookFormat[] = ['standard', 'slack'];
/** An endpoint's name: what the outbox rows and the metrics call it (migrations/0009 checks the same). */
const WEBHOOK_NAME = /^[A-Za-z0-9_.:[\]-]{1,64}$/;

/**
 * WEBHOOKS: a JSON array of `{"url", "secret", "format"?, "events"?, "name"?}` (docs/configuration.md).
 * Problems name the entry and the key, never a value: a secret, or a Slack URL (whose path is its
 * secret), must not reach a log.
 */
function webhookEndpoints(text: string | null, production: boolean, problems: string[]): WebhookEndpoint[] {
  if (text === null) return [];
  let list: JsonValue;
  try {
    list = parseJson(text);
  } catch (err) {
    problems.push(`WEBHOOKS is not valid JSON: ${(err as Error).message}`);
    return [];
  }
  if (!Array.isArray(list)) {
    problems.push('WEBHOOKS must be a JSON array of objects like {"url": "https://…", "secret": "whsec_…"}');
    return [];
  }
  const out: WebhookEndpoint[] = [];
  const names = new Set<string>();
  list.forEach((item, i) => {
    const at = `WEBHOOKS[${i}]`;
    if (!isJsonObject(item)) {
      problems.push(`${at} must be an object like {"url": "https://…", "secret": "whsec_…"}`);
      return;
    }
    const before = problems.length;
    for (const key of Object.keys(item)) {
      if (!(WEBHOOK_KEYS as readonly string[]).includes(key))
        problems.push(`${at} has an unknown key "${key.slice(0, 64)}" (known: ${WEBHOOK_KEYS.join(', ')})`);
    }
    const format = item.format ?? 'standard';
    if (typeof format !== 'string' || !(WEBHOOK_FORMATS as readonly string[]).includes(format)) {
      problems.push(`${at}.format must be "standard" or "slack"`);
    }
    let url: URL | null = null;
    if (typeof item.url !== 'string') problems.push(`${at}.url is required: the receiver's http:// or https:// URL`);
    else {
      try {
        url = new URL(item.url);
      } catch {
        problems.push(`${at}.url must be an absolute http:// or https:// URL`);
      }
    }
    if (url !== null) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        problems.push(`${at}.url must be an http:// or https:// URL`);
      else if (url.username !== '' || url.password !== '')
        problems.push(`${at}.url must not carry credentials (the signature authenticates Gatehouse)`);
      else if (production && url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
        problems.push(`NODE_ENV=production needs an https:// ${at}.url (plain http only to a loopback address)`);
      }
    }
    const secret = item.secret;
    if (format === 'slack') {
      if (secret !== undefined)
        problems.push(`${at}.secret must not be set with format "slack": Slack incoming webhooks are not signed`);
    } else if (typeof secret !== 'string') {
      problems.push(
        `${at}.secret is required: a Standard Webhooks secret, "whsec_" and the base64 of 24 to 64 random bytes`,
      );
    } else if (!isWebhookSecret(secret)) {
      problems.push(
        `${at}.secret must be "whsec_" and the base64 of 24 to 64 random bytes (like whsec_ followed by the output of openssl rand -base64 32)`,
      );
    }
    let events: WebhookEventType[] | null = null;
    if (item.events !== undefined) {
      const given = item.events;
      if (
        !Array.isArray(given) ||
        given.length === 0 ||
        given.some((e) => typeof e !== 'string' || !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e)) ||
        new Set(given).size !== given.length
      ) {
        problems.push(`${at}.events must be a list, without repeats, of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
      } else events = given as WebhookEventType[];
    }
    // Without a name, the receiver's host names it (never the path: a Slack URL's path is its secret).
    // Only an entry with no other problem is named (its host may not be one).
    if (problems.length > before || url === null) return;
    const name = item.name ?? url.host;
    if (typeof name !== 'string' || !WEBHOOK_NAME.test(name)) {
      problems.push(
        item.name === undefined
          ? `${at} needs a "name" (1 to 64 of A-Z a-z 0-9 _ . : - [ ]): its host does not make one`
          : `${at}.name must be 1 to 64 of A-Z a-z 0-9 _ . : - [ ]`,
      );
    } else if (names.has(name)) {
      problems.push(
        `${at} is named "${name}" like an earlier entry: give each a distinct "name" (events are queued per name)`,
      );
    } else names.add(name);
    if (problems.length > before || typeof name !== 'string') return;
    out.push({
      name,
      url: url.href,
      format: format as WebhookFormat,
      secret: format === 'slack' ? null : (secret as string),
      events,
    });
  });
  return out;
}

/** `whsec_` (optional, as the standardwebhooks package reads it) and canonical base64 of 24 to 64 bytes (the spec's range). */
function isWebhookSecret(secret: string): boolean {
  const b64 = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) return false;
  const bytes = Buffer.from(b64, 'base64');
  return bytes.toString('base64') === b64 && bytes.length >= 24 && bytes.length <= 64;
}
