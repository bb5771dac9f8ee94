// The only reader of process.env. Every variable is validated at once, every problem reported
// together, and the result frozen. docs/configuration.md lists each one with its default.
import { createPublicKey, type KeyObject } from 'node:crypto';
import { parseJson } from './json/parse.js';
import { isJsonObject, type JsonValue } from './json/value.js';
import { amountOfText, REPORT_DECIMALS } from './policy/amount.js';
import type { Amount } from './policy/model.js';
import { DURATION_FORMAT, isBareNumber, parseDuration } from './policy/duration.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEndpoint, type WebhookEventType, type WebhookFormat } from './webhooks/events.js';

export type JwtAlgorithm = 'HS256' | 'RS256' | 'ES256' | 'EdDSA';

export interface Config {
  readonly production: boolean;
  readonly port: number;
  readonly host: string;
  readonly policyDir: string;
  /** SHADOW_POLICY_DIR: a second set decided beside the serving one, never answering (null: off). */
  readonly shadowPolicyDir: string | null;
  readonly policyEnv: string | null;
  /** At most one of secret / publicKey / jwksUrl is set; none in development: a secret is generated. */
  readonly jwt: {
    readonly secret: string | null;
    readonly publicKey: string | null;
    /** The algorithm of secret / publicKey; null with a JWKS (each key pins its own) or no key. */
    readonly algorithm: JwtAlgorithm | null;
    /** JWT_JWKS_URL: the identity provider's key set, fetched and refreshed (src/http/jwks.ts). */
    readonly jwksUrl: string | null;
    /** JWT_JWKS_REFRESH: how often the key set is fetched again, in ms. */
    readonly jwksRefreshMs: number;
    /** JWT_ALLOW_UNBOUND: production accepts an asymmetric key or JWKS without JWT_AUDIENCE / JWT_ISSUER. */
    readonly allowUnbound: boolean;
    readonly issuer: string | null;
    readonly audience: string | null;
    readonly clockToleranceSec: number;
    /** Longest lifetime accepted: a token whose `exp` is further ahead than this (plus the tolerance) is 401. */
    readonly maxLifetimeSec: number;
  };
  readonly claims: { readonly team: string; readonly agent: string; readonly roles: string };
  /** Sign-in for people with the company's OpenID provider (docs/security.md "Sign-in"); null without OIDC_ISSUER. */
  readonly oidc: OidcConfig | null;
  readonly session: {
    /** SESSION_SECRET: the key of the sign-in cookie; null: generated under DATA_DIR (development only). */
    readonly secret: string | null;
    /** SESSION_TTL: how long a signed-in session lasts, from sign-in (not extended by use). */
    readonly ttlMs: number;
  };
  readonly approverRole: string;
  /** FAST_GRANT_SECONDS: a grant given sooner after filing was too fast to have been read (GET /approvals/stats). */
  readonly fastGrantSeconds: number;
  readonly adminRole: string;
  /** Roles that may read `/explain` and `/policies` (POLICY_READER_ROLE); any one of them suffices. */
  readonly policyReaderRoles: readonly string[];
  readonly bodyLimit: number;
  readonly connections: ConnectionLimits;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** LOG_FORMAT: JSON lines, or pino-pretty's readable lines; null when unset (src/service.ts: pretty on a terminal). */
  readonly logFormat: LogFormat | null;
  readonly logArgs: boolean;
  readonly databaseUrl: string | null;
  readonly dataDir: string;
  readonly approvalTtlMs: number;
  readonly grantTtlMs: number;
  readonly maxPendingApprovals: number;
  /** Largest canonical arguments an approval may hold (bytes). */
  readonly approvalMaxBytes: number;
  /** How long a denied request cannot be filed again by the same caller; 0: no cooldown. */
  readonly deniedCooldownMs: number;
  readonly maxWaitsPerCaller: number;
  /** Idempotency-Keys one caller (`sub`) keeps at once, and the bytes of their keys and kept answers. */
  readonly idempotencyMaxKeys: number;
  readonly idempotencyMaxBytes: number;
  /** Long-polls this replica holds at once. */
  readonly maxWaits: number;
  readonly dbPoolMax: number;
  readonly dbDeadlineMs: number;
  /** Connections of the budget and rate-limit counters (src/db/lanes.ts), opened when a call needs one. */
  readonly budgetConnections: number;
  readonly shutdownGraceMs: number;
  /** PUBLIC_URL: where people reach Gatehouse (no trailing slash); webhook links and sign-in's redirect URIs are made from it. */
  readonly publicUrl: string | null;
  readonly webhooks: WebhookSettings;
  /** DECISION_STORE=postgres: every decision recorded in the database (docs/operations.md "Decision records"); null: off. */
  readonly decisionStore: DecisionStoreSettings | null;
  /** AUDITOR_ROLE: may read GET /decisions (admins may too). */
  readonly auditorRole: string;
  readonly usage: UsageSettings;
}

/** Who may report spend to POST /usage, and how much at once (docs/spec.md section 5.9). */
export interface UsageSettings {
  /** USAGE_ROLE: may report spend into the counters its own calls count (not `global` ones). */
  readonly role: string;
  /** USAGE_ANY_ROLE: may report spend for another identity (`for`) and into `global` counters. */
  readonly anyRole: string;
  /** USAGE_MAX_USD: the most one report may carry. */
  readonly maxUsd: Amount;
}

export interface DecisionStoreSettings {
  /** DECISION_QUEUE_MAX: records waiting to be written; more are dropped and counted. */
  readonly queueMax: number;
  /** DECISION_RETENTION: partitions (days) older than this are dropped. */
  readonly retentionMs: number;
}

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

export interface OidcConfig {
  /** OIDC_ISSUER: the provider's issuer identifier; its metadata is discovered from it. */
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** OIDC_SCOPES: the scopes asked for, space-separated, `openid` among them. */
  readonly scopes: string;
  /** OIDC_ROLES_CLAIM: the ID token claim that holds the roles (default ROLES_CLAIM). */
  readonly rolesClaim: string;
}

/** How long a client may take to send a request, and how many connections are open at once. */
export interface ConnectionLimits {
  /** HEADERS_TIMEOUT: from a request's first byte (or the connection's opening) to its last header. */
  readonly headersTimeoutMs: number;
  /** REQUEST_TIMEOUT: from the same start to the request's last body byte. Answering is not counted. */
  readonly requestTimeoutMs: number;
  /** KEEP_ALIVE_TIMEOUT: an idle keep-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number;
  /** MAX_CONNECTIONS: connections beyond this are closed as soon as they are accepted. */
  readonly maxConnections: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const LOG_FORMATS = ['pretty', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * JWT_MAX_LIFETIME's default, in seconds: 24 h, the lifetime of the development tokens `serve`
 * prints. A bound on `exp - now` stops an `exp` of 1e20, or one written in milliseconds by mistake,
 * from making a token (and its cached identity) valid practically forever.
 */
export const DEFAULT_JWT_MAX_LIFETIME_SEC = 86_400;

/**
 * The policy environment the service serves: POLICY_ENV, else outside production the example
 * policies' `dev` (docs/design.md "The process"); the CLI's `check` and `hash` load the same one.
 */
export function servedPolicyEnv(policyEnv: string | null, production: boolean): string | null {
  return policyEnv ?? (production ? null : 'dev');
}

/** `servedPolicyEnv` of an environment's POLICY_ENV and NODE_ENV, without validating the rest of the configuration. */
export function servedPolicyEnvOf(env: Readonly<Record<string, string | undefined>> = process.env): string | null {
  return servedPolicyEnv(env.POLICY_ENV || null, env.NODE_ENV === 'production');
}

/** Read and validate the configuration from an environment (process.env by default). */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): Config {
  const problems: string[] = [];
  const str = (name: string, fallback: string | null = null): string | null => {
    const v = env[name];
    return v === undefined || v === '' ? fallback : v;
  };
  // `unit`: a setting whose name gives its unit (DB_DEADLINE_MS, FAST_GRANT_SECONDS) takes digits
  // alone, in that unit, whatever durations elsewhere read.
  const int = (name: string, fallback: number, min: number, max: number, unit?: 'milliseconds' | 'seconds'): number => {
    const raw = str(name);
    if (raw === null) return fallback;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < min || n > max) {
      problems.push(
        unit === undefined
          ? `${name} must be an integer from ${min} to ${max}`
          : `${name} must be a number of ${unit} from ${min} to ${max}, digits only (its name gives the unit)`,
      );
      return fallback;
    }
    return n;
  };
  // Every duration is bounded: a timer beyond 2^31-1 ms fires after 1 ms in Node's setTimeout, so no
  // timeout may get there, and a bound refuses most values written in milliseconds where a bare
  // number is seconds. `allowZero` lets "0" mean "off"; `wholeSeconds` is for settings kept in
  // seconds (JWT times).
  const duration = (name: string, fallback: string, range: DurationRange, options: { allowZero?: boolean; wholeSeconds?: boolean } = {}): number => {
    const raw = str(name, fallback)!;
    if (options.allowZero === true && raw.trim() === '0') return 0;
    const ms = parseDuration(raw);
    if (ms === null || ms < parseDuration(range.min)! || ms > parseDuration(range.max)!) {
      const zero = options.allowZero === true ? ', or 0 (off)' : '';
      // Digits alone are echoed (a number is no secret): a value meant as milliseconds is then plain to see.
      const bare = ms !== null && isBareNumber(raw) ? ` (${raw.trim()} is read as seconds; ${raw.trim()}ms is milliseconds)` : '';
      problems.push(`${name} must be a duration from ${range.min} to ${range.max}${zero}: ${DURATION_FORMAT}${bare}`);
      return parseDuration(fallback)!;
    }
    if (options.wholeSeconds === true && ms % 1000 !== 0) {
      problems.push(`${name} must be a whole number of seconds (like 30s, 5m, 1h)`);
      return parseDuration(fallback)!;
    }
    return ms;
  };
  const seconds = (name: string, fallback: string, range: DurationRange, options: { allowZero?: boolean } = {}): number =>
    duration(name, fallback, range, { ...options, wholeSeconds: true }) / 1000;
  const bool = (name: string): boolean => {
    const raw = str(name, 'false');
    if (raw !== 'true' && raw !== 'false') problems.push(`${name} must be true or false`);
    return raw === 'true';
  };

  const production = env.NODE_ENV === 'production';
  const secret = str('JWT_SECRET');
  // Trimmed once, here: env files and secret stores often add a newline or indentation that the
  // PEM decoder refuses. The key validated below is the key the server then uses.
  const publicKey = str('JWT_PUBLIC_KEY')?.trim() ?? null;
  const jwksUrl = str('JWT_JWKS_URL')?.trim() ?? null;
  const issuer = str('JWT_ISSUER');
  const audience = str('JWT_AUDIENCE');
  const allowUnbound = bool('JWT_ALLOW_UNBOUND');
  let algorithm: JwtAlgorithm | null = null;
  if (secret !== null && publicKey !== null) problems.push('set JWT_SECRET or JWT_PUBLIC_KEY, not both');
  if (jwksUrl !== null && (secret !== null || publicKey !== null)) {
    problems.push(`set JWT_JWKS_URL or ${secret !== null ? 'JWT_SECRET' : 'JWT_PUBLIC_KEY'}, not both`);
  }
  if (jwksUrl !== null) {
    const problem = jwksUrlProblem(jwksUrl, production);
    if (problem !== null) problems.push(problem);
  } else if (secret !== null) {
    // RFC 8725 section 3.5: an HMAC key must carry enough entropy to resist brute force.
    if (Buffer.byteLength(secret) < 32) problems.push('JWT_SECRET must be at least 32 bytes');
    algorithm = 'HS256';
  } else if (publicKey !== null) {
    algorithm = algorithmOf(publicKey);
    if (algorithm === null) problems.push('JWT_PUBLIC_KEY must be a PEM public key: RSA (RS256), EC P-256 (ES256) or Ed25519 (EdDSA)');
  } else if (production) {
    problems.push('NODE_ENV=production needs JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL');
  }
  // A provider's public key verifies every token it mints, for every application it serves: without
  // an audience (and issuer) to match, a token minted for another application, roles included, is
  // accepted here (RFC 7519 section 4.1.3, RFC 8725 section 3.9). A shared HS256 secret is this
  // service's own.
  if (production && (publicKey !== null || jwksUrl !== null) && !allowUnbound) {
    const missing = [...(audience === null ? ['JWT_AUDIENCE'] : []), ...(issuer === null ? ['JWT_ISSUER'] : [])];
    if (missing.length > 0) {
      problems.push(
        `NODE_ENV=production with ${jwksUrl !== null ? 'JWT_JWKS_URL' : 'JWT_PUBLIC_KEY'} needs ${missing.join(' and ')}, ` +
          'so that tokens the provider mints for other applications are refused (or set JWT_ALLOW_UNBOUND=true to accept them)',
      );
    }
  }
  const rolesClaim = str('ROLES_CLAIM', 'roles')!;
  const publicUrl = publicUrlOf(str('PUBLIC_URL'), problems);
  const oidc = oidcConfig(env, str, { production, publicUrl, rolesClaim }, problems);
  const sessionSecret = str('SESSION_SECRET');
  // The same bound as JWT_SECRET's: the sign-in cookie's key is derived from it (RFC 8725 section 3.5's reasoning).
  if (sessionSecret !== null && Buffer.byteLength(sessionSecret) < 32) problems.push('SESSION_SECRET must be at least 32 bytes');
  // Replicas must share the key, and a generated one would change with every new DATA_DIR.
  if (production && oidc !== null && sessionSecret === null)
    problems.push('NODE_ENV=production with OIDC_ISSUER needs SESSION_SECRET (at least 32 bytes, the same on every replica)');

  const databaseUrl = str('DATABASE_URL');
  if (production && databaseUrl === null) problems.push('NODE_ENV=production needs DATABASE_URL');
  const decisionStoreKind = str('DECISION_STORE', 'off')!;
  if (decisionStoreKind !== 'off' && decisionStoreKind !== 'postgres') problems.push('DECISION_STORE must be off or postgres');
  // The records outlive the process: not kept in the embedded development database under DATA_DIR.
  if (decisionStoreKind === 'postgres' && databaseUrl === null) problems.push('DECISION_STORE=postgres needs DATABASE_URL');
  const decisionQueueMax = int('DECISION_QUEUE_MAX', 10_000, 1, 1_000_000);
  const decisionRetentionMs = duration('DECISION_RETENTION', '30d', { min: '1d', max: '3650d' });

  const logLevel = str('LOG_LEVEL', 'info')!;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const logFormat = str('LOG_FORMAT');
  if (logFormat !== null && !(LOG_FORMATS as readonly string[]).includes(logFormat)) problems.push(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}`);

  const approverRole = str('APPROVER_ROLE', 'approver')!;
  const adminRole = str('ADMIN_ROLE', 'admin')!;
  const policyReaderRoles = roleList('POLICY_READER_ROLE', str('POLICY_READER_ROLE'), [adminRole, approverRole], problems);
  const connections: ConnectionLimits = {
    headersTimeoutMs: duration('HEADERS_TIMEOUT', '10s', CONNECTION_TIMEOUT_RANGE),
    requestTimeoutMs: duration('REQUEST_TIMEOUT', '15s', CONNECTION_TIMEOUT_RANGE),
    keepAliveTimeoutMs: duration('KEEP_ALIVE_TIMEOUT', '72s', CONNECTION_TIMEOUT_RANGE),
    maxConnections: int('MAX_CONNECTIONS', 1024, 1, 1_000_000),
  };
  // Node refuses a headers timeout longer than the request timeout (http.createServer).
  if (connections.headersTimeoutMs > connections.requestTimeoutMs) problems.push('HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT');

  const endpoints = webhookEndpoints(str('WEBHOOKS'), production, problems);
  const retryMinMs = duration('WEBHOOK_RETRY_MIN', '5s', { min: '1ms', max: '1h' });
  const retryMaxMs = duration('WEBHOOK_RETRY_MAX', '1h', { min: '1ms', max: '24h' });
  if (retryMinMs > retryMaxMs) problems.push('WEBHOOK_RETRY_MIN must not be longer than WEBHOOK_RETRY_MAX');
  const webhooks: WebhookSettings = {
    endpoints,
    timeoutMs: duration('WEBHOOK_TIMEOUT', '5s', { min: '1s', max: '60s' }),
    retryForMs: duration('WEBHOOK_RETRY_FOR', '24h', { min: '1s', max: '30d' }),
    retryMinMs,
    retryMaxMs,
  };

  const config: Config = {
    production,
    port: int('PORT', 8080, 0, 65535),
    host: str('HOST', '127.0.0.1')!,
    policyDir: str('POLICY_DIR', './policies')!,
    shadowPolicyDir: str('SHADOW_POLICY_DIR'),
    policyEnv: str('POLICY_ENV'),
    jwt: {
      secret,
      publicKey,
      algorithm,
      jwksUrl,
      jwksRefreshMs: duration('JWT_JWKS_REFRESH', '10m', { min: '10s', max: '24h' }),
      allowUnbound,
      issuer,
      audience,
      clockToleranceSec: seconds('JWT_CLOCK_TOLERANCE', '30s', { min: '1s', max: '300s' }, { allowZero: true }),
      maxLifetimeSec: seconds('JWT_MAX_LIFETIME', `${DEFAULT_JWT_MAX_LIFETIME_SEC}s`, { min: '60s', max: '365d' }),
    },
    claims: { team: str('TEAM_CLAIM', 'team')!, agent: str('AGENT_CLAIM', 'agent')!, roles: rolesClaim },
    publicUrl,
    oidc,
    session: { secret: sessionSecret, ttlMs: duration('SESSION_TTL', '8h', { min: '5m', max: '7d' }) },
    approverRole,
    fastGrantSeconds: int('FAST_GRANT_SECONDS', 5, 0, 3600, 'seconds'),
    adminRole,
    policyReaderRoles,
    bodyLimit: int('BODY_LIMIT', 1_048_576, 1024, 64 * 1_048_576),
    connections,
    logLevel: logLevel as Config['logLevel'],
    logFormat: logFormat as LogFormat | null,
    logArgs: bool('LOG_ARGS'),
    databaseUrl,
    dataDir: str('DATA_DIR', '.data')!,
    approvalTtlMs: duration('APPROVAL_TTL', '24h', { min: '1s', max: '30d' }),
    grantTtlMs: duration('GRANT_TTL', '1h', { min: '1s', max: '7d' }),
    maxPendingApprovals: int('MAX_PENDING_APPROVALS', 100, 1, 1_000_000),
    approvalMaxBytes: int('APPROVAL_MAX_BYTES', 65_536, 2, 16 * 1_048_576),
    deniedCooldownMs: duration('DENIED_COOLDOWN', '10m', { min: '1s', max: '7d' }, { allowZero: true }),
    maxWaitsPerCaller: int('MAX_WAITS_PER_CALLER', 20, 1, 100_000),
    idempotencyMaxKeys: int('IDEMPOTENCY_MAX_KEYS', 1000, 1, 1_000_000),
    idempotencyMaxBytes: int('IDEMPOTENCY_MAX_BYTES', 1_048_576, 1024, 1024 * 1_048_576),
    // Every wait holds a connection: by default at most half of them may be waits.
    maxWaits: int('MAX_WAITS', Math.max(1, Math.floor(connections.maxConnections / 2)), 1, 1_000_000),
    dbPoolMax: int('DB_POOL_MAX', 10, 1, 1000),
    dbDeadlineMs: int('DB_DEADLINE_MS', 2000, 50, 60_000, 'milliseconds'),
    budgetConnections: int('BUDGET_CONNECTIONS', 4, 1, 1000),
    shutdownGraceMs: int('SHUTDOWN_GRACE_MS', 10_000, 0, 600_000, 'milliseconds'),
    webhooks,
    decisionStore: decisionStoreKind === 'postgres' ? { queueMax: decisionQueueMax, retentionMs: decisionRetentionMs } : null,
    auditorRole: str('AUDITOR_ROLE', 'auditor')!,
    usage: {
      role: str('USAGE_ROLE', 'usage_reporter')!,
      anyRole: str('USAGE_ANY_ROLE', 'usage_billing')!,
      maxUsd: reportCap(str('USAGE_MAX_USD', '100')!, problems),
    },
  };
  // Waits up to the connection cap would leave no connection for anything else.
  if (config.maxWaits >= connections.maxConnections) problems.push('MAX_WAITS must be lower than MAX_CONNECTIONS (every wait holds a connection)');
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(config);
}

/**
 * Why JWT_JWKS_URL cannot be used, or null. In production the key set must come over https (a
 * network attacker who can answer it would mint any identity); plain http is allowed there only to
 * a loopback address (a local sidecar or proxy), and anywhere outside production.
 */
function jwksUrlProblem(text: string, production: boolean): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'JWT_JWKS_URL must be an absolute https:// URL';
  }
  if (url.username !== '' || url.password !== '') return 'JWT_JWKS_URL must not carry credentials';
  if (url.protocol === 'https:') return null;
  if (url.protocol !== 'http:') return 'JWT_JWKS_URL must be an https:// URL';
  if (production && !isLoopbackHost(url.hostname)) {
    return 'NODE_ENV=production needs an https:// JWT_JWKS_URL (plain http only to a loopback address)';
  }
  return null;
}

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/** The bounds of a duration setting, each a duration. */
interface DurationRange {
  readonly min: string;
  readonly max: string;
}

const CONNECTION_TIMEOUT_RANGE: DurationRange = { min: '1s', max: '1h' };

/** PUBLIC_URL as links are made from it: an absolute http(s) URL, no credentials, query or fragment, no trailing slash. */
function publicUrlOf(text: string | null, problems: string[]): string | null {
  if (text === null) return null;
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    problems.push('PUBLIC_URL must be an absolute http:// or https:// URL, like https://gatehouse.example.com');
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push('PUBLIC_URL must be an http:// or https:// URL');
  else if (url.username !== '' || url.password !== '') problems.push('PUBLIC_URL must not carry credentials');
  else if (url.search !== '' || url.hash !== '') problems.push('PUBLIC_URL must not have a query or a fragment');
  else return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  return null;
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
      if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push(`${at}.url must be an http:// or https:// URL`);
      else if (url.username !== '' || url.password !== '') problems.push(`${at}.url must not carry credentials (the signature authenticates Gatehouse)`);
      else if (production && url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
        problems.push(`NODE_ENV=production needs an https:// ${at}.url (plain http only to a loopback address)`);
      }
    }
    const secret = item.secret;
    if (format === 'slack') {
      if (secret !== undefined) problems.push(`${at}.secret must not be set with format "slack": Slack incoming webhooks are not signed`);
    } else if (typeof secret !== 'string') {
      problems.push(`${at}.secret is required: a Standard Webhooks secret, "whsec_" and the base64 of 24 to 64 random bytes`);
    } else if (!isWebhookSecret(secret)) {
      problems.push(`${at}.secret must be "whsec_" and the base64 of 24 to 64 random bytes (like whsec_ followed by the output of openssl rand -base64 32)`);
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
      problems.push(`${at} is named "${name}" like an earlier entry: give each a distinct "name" (events are queued per name)`);
    } else names.add(name);
    if (problems.length > before || typeof name !== 'string') return;
    out.push({ name, url: url.href, format: format as WebhookFormat, secret: format === 'slack' ? null : (secret as string), events });
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

const OIDC_NAMES = ['OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_SCOPES', 'OIDC_ROLES_CLAIM'] as const;

/**
 * OIDC_ISSUER and its companions, or null when sign-in is off. The provider is reached over https
 * (plain http only outside production or to a loopback address, as JWT_JWKS_URL); in production the
 * page itself must be https too, or the session cookie could not be Secure.
 */
function oidcConfig(
  env: Readonly<Record<string, string | undefined>>,
  str: (name: string) => string | null,
  context: { production: boolean; publicUrl: string | null; rolesClaim: string },
  problems: string[],
): OidcConfig | null {
  const issuer = str('OIDC_ISSUER')?.trim() ?? null;
  if (issuer === null) {
    for (const name of OIDC_NAMES) if (str(name) !== null) problems.push(`${name} is set but OIDC_ISSUER is not: set OIDC_ISSUER to turn sign-in on`);
    return null;
  }
  const { production, publicUrl } = context;
  const before = problems.length;
  let url: URL | null = null;
  try {
    url = new URL(issuer);
  } catch {
    problems.push("OIDC_ISSUER must be an absolute https:// URL (the identity provider's issuer identifier)");
  }
  if (url !== null) {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') problems.push('OIDC_ISSUER must be an https:// URL');
    else if (url.username !== '' || url.password !== '') problems.push('OIDC_ISSUER must not carry credentials');
    else if (url.search !== '' || url.hash !== '') problems.push('OIDC_ISSUER must not have a query or a fragment');
    else if (url.protocol === 'http:' && production && !isLoopbackHost(url.hostname)) {
      problems.push('NODE_ENV=production needs an https:// OIDC_ISSUER (plain http only to a loopback address)');
    }
  }
  const clientId = str('OIDC_CLIENT_ID');
  const clientSecret = str('OIDC_CLIENT_SECRET');
  if (clientId === null) problems.push('OIDC_ISSUER needs OIDC_CLIENT_ID');
  if (clientSecret === null) problems.push('OIDC_ISSUER needs OIDC_CLIENT_SECRET');
  if (env.PUBLIC_URL === undefined || env.PUBLIC_URL === '') problems.push('OIDC_ISSUER needs PUBLIC_URL (the redirect URI is PUBLIC_URL/auth/callback)');
  else if (publicUrl !== null && production && !publicUrl.startsWith('https://') && !isLoopbackHost(new URL(publicUrl).hostname)) {
    problems.push('NODE_ENV=production with OIDC_ISSUER needs an https:// PUBLIC_URL: the session cookie is Secure');
  }
  const scopes = (str('OIDC_SCOPES') ?? 'openid').trim().split(/\s+/);
  if (!scopes.includes('openid')) problems.push('OIDC_SCOPES must include openid');
  if (scopes.some((s) => !/^[\x21\x23-\x5B\x5D-\x7E]+$/.test(s))) problems.push('OIDC_SCOPES must be scope names separated by spaces (RFC 6749 section 3.3)');
  if (problems.length > before || clientId === null || clientSecret === null) return null;
  return { issuer, clientId, clientSecret, scopes: scopes.join(' '), rolesClaim: str('OIDC_ROLES_CLAIM') ?? context.rolesClaim };
}

/**
 * A comma-separated list of roles (spaces around each are ignored); unset, `fallback` (deduplicated).
 * An empty entry is refused rather than skipped: `admin,` is more likely a mistake than a list of one.
 */
function roleList(name: string, raw: string | null, fallback: readonly string[], problems: string[]): readonly string[] {
  if (raw === null) return [...new Set(fallback)];
  const roles = raw.split(',').map((r) => r.trim());
  if (roles.some((r) => r === '')) {
    problems.push(`${name} must be a comma-separated list of role names, none of them empty`);
    return [...new Set(fallback)];
  }
  return [...new Set(roles)];
}

/**
 * USAGE_MAX_USD: plain decimal digits (no sign, no exponent), above 0 and below a billion, with at
 * most REPORT_DECIMALS digits after the point, as a report's `usd` must be written.
 */
function reportCap(text: string, problems: string[]): Amount {
  const fallback = amountOfText('100')!;
  const plain = new RegExp(`^(?:0|[1-9][0-9]{0,8})(?:\\.[0-9]{1,${REPORT_DECIMALS}})?$`);
  const amount = plain.test(text.trim()) ? amountOfText(text.trim()) : null;
  if (amount === null || amount.text === '0') {
    problems.push(`USAGE_MAX_USD must be a decimal number above 0 and below 1000000000, with at most ${REPORT_DECIMALS} digits after the point`);
    return fallback;
  }
  return amount;
}

/**
 * The one algorithm a public key may verify: the key, not the token, picks it (RFC 8725 section 3.1).
 * `pem` is used as given (loadConfig trims it first), so a key accepted here is accepted by the verifier.
 */
export function algorithmOf(pem: string): JwtAlgorithm | null {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    return null;
  }
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  return null;
}

function deepFreeze<T extends object>(o: T): T {
  for (const v of Object.values(o)) if (v !== null && typeof v === 'object') deepFreeze(v as object);
  return Object.freeze(o);
}
