// The only reader of process.env. Every variable is validated at once, every problem reported
// together, and the result frozen; each subsystem's settings are read by their own parser
// (src/config/: tokens, sign-in, webhooks), composed here. docs/configuration.md lists each one.
import { jwtSettings, type JwtSettings } from './config/jwt.js';
import { createReader, roleList, type DurationRange, type Env } from './config/read.js';
import { oidcConfig, publicUrlOf, type OidcConfig } from './config/signin.js';
import { webhookSettings, type WebhookSettings } from './config/webhooks.js';
import { amountOfText, REPORT_DECIMALS } from './policy/amount.js';
import type { Amount } from './policy/model.js';

export { algorithmOf, DEFAULT_JWT_MAX_LIFETIME_SEC, type JwtAlgorithm } from './config/jwt.js';
export type { OidcConfig } from './config/signin.js';
export type { WebhookSettings } from './config/webhooks.js';

export interface Config {
  readonly production: boolean;
  readonly port: number;
  readonly host: string;
  readonly policyDir: string;
  /** SHADOW_POLICY_DIR: a second set decided beside the serving one, never answering (null: off). */
  readonly shadowPolicyDir: string | null;
  readonly policyEnv: string | null;
  /** At most one of secret / publicKey / jwksUrl is set; none in development: a secret is generated. */
  readonly jwt: JwtSettings;
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
  /** RUNTIME_ROLE: the agent's runtime, which may file approvals for calls a crash interrupted. */
  readonly runtimeRole: string;
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
 * The policy environment the service serves: POLICY_ENV, else outside production the example
 * policies' `dev` (docs/design.md "The process"); the CLI's `check` and `hash` load the same one.
 */
export function servedPolicyEnv(policyEnv: string | null, production: boolean): string | null {
  return policyEnv ?? (production ? null : 'dev');
}

/** `servedPolicyEnv` of an environment's POLICY_ENV and NODE_ENV, without validating the rest of the configuration. */
export function servedPolicyEnvOf(env: Env = process.env): string | null {
  return servedPolicyEnv(env.POLICY_ENV || null, env.NODE_ENV === 'production');
}

/** Read and validate the configuration from an environment (process.env by default). */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const read = createReader(env, problems);
  const { str, int, duration, bool } = read;
  const production = env.NODE_ENV === 'production';
  const jwt = jwtSettings(read, production);
  const rolesClaim = str('ROLES_CLAIM', 'roles')!;
  const publicUrl = publicUrlOf(str('PUBLIC_URL'), problems);
  const oidc = oidcConfig(env, str, { production, publicUrl, rolesClaim }, problems);
  const sessionSecret = str('SESSION_SECRET');
  // The same bound as JWT_SECRET's: the sign-in cookie's key is derived from it (RFC 8725 section 3.5's reasoning).
  if (sessionSecret !== null && Buffer.byteLength(sessionSecret) < 32)
    problems.push('SESSION_SECRET must be at least 32 bytes');
  // Replicas must share the key, and a generated one would change with every new DATA_DIR.
  if (production && oidc !== null && sessionSecret === null)
    problems.push(
      'NODE_ENV=production with OIDC_ISSUER needs SESSION_SECRET (at least 32 bytes, the same on every replica)',
    );

  const databaseUrl = str('DATABASE_URL');
  if (production && databaseUrl === null) problems.push('NODE_ENV=production needs DATABASE_URL');
  const decisionStoreKind = str('DECISION_STORE', 'off')!;
  if (decisionStoreKind !== 'off' && decisionStoreKind !== 'postgres')
    problems.push('DECISION_STORE must be off or postgres');
  // The records outlive the process: not kept in the embedded development database under DATA_DIR.
  if (decisionStoreKind === 'postgres' && databaseUrl === null)
    problems.push('DECISION_STORE=postgres needs DATABASE_URL');
  const decisionQueueMax = int('DECISION_QUEUE_MAX', 10_000, 1, 1_000_000);
  const decisionRetentionMs = duration('DECISION_RETENTION', '30d', { min: '1d', max: '3650d' });

  const logLevel = str('LOG_LEVEL', 'info')!;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel))
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const logFormat = str('LOG_FORMAT');
  if (logFormat !== null && !(LOG_FORMATS as readonly string[]).includes(logFormat))
    problems.push(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}`);

  const approverRole = str('APPROVER_ROLE', 'approver')!;
  const adminRole = str('ADMIN_ROLE', 'admin')!;
  const policyReaderRoles = roleList(
    'POLICY_READER_ROLE',
    str('POLICY_READER_ROLE'),
    [adminRole, approverRole],
    problems,
  );
  const connections: ConnectionLimits = {
    headersTimeoutMs: duration('HEADERS_TIMEOUT', '10s', CONNECTION_TIMEOUT_RANGE),
    requestTimeoutMs: duration('REQUEST_TIMEOUT', '15s', CONNECTION_TIMEOUT_RANGE),
    keepAliveTimeoutMs: duration('KEEP_ALIVE_TIMEOUT', '72s', CONNECTION_TIMEOUT_RANGE),
    maxConnections: int('MAX_CONNECTIONS', 1024, 1, 1_000_000),
  };
  // Node refuses a headers timeout longer than the request timeout (http.createServer).
  if (connections.headersTimeoutMs > connections.requestTimeoutMs)
    problems.push('HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT');

  const webhooks = webhookSettings(read, production);

  const config: Config = {
    production,
    port: int('PORT', 8080, 0, 65535),
    host: str('HOST', '127.0.0.1')!,
    policyDir: str('POLICY_DIR', './policies')!,
    shadowPolicyDir: str('SHADOW_POLICY_DIR'),
    policyEnv: str('POLICY_ENV'),
    jwt,
    claims: { team: str('TEAM_CLAIM', 'team')!, agent: str('AGENT_CLAIM', 'agent')!, roles: rolesClaim },
    publicUrl,
    oidc,
    session: { secret: sessionSecret, ttlMs: duration('SESSION_TTL', '8h', { min: '5m', max: '7d' }) },
    approverRole,
    runtimeRole: str('RUNTIME_ROLE', 'runtime')!,
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
    decisionStore:
      decisionStoreKind === 'postgres' ? { queueMax: decisionQueueMax, retentionMs: decisionRetentionMs } : null,
    auditorRole: str('AUDITOR_ROLE', 'auditor')!,
    usage: {
      role: str('USAGE_ROLE', 'usage_reporter')!,
      anyRole: str('USAGE_ANY_ROLE', 'usage_billing')!,
      maxUsd: reportCap(str('USAGE_MAX_USD', '100')!, problems),
    },
  };
  // Waits up to the connection cap would leave no connection for anything else.
  if (config.maxWaits >= connections.maxConnections)
    problems.push('MAX_WAITS must be lower than MAX_CONNECTIONS (every wait holds a connection)');
  if (problems.length > 0) throw new ConfigError(problems);
  return deepFreeze(config);
}

const CONNECTION_TIMEOUT_RANGE: DurationRange = { min: '1s', max: '1h' };

/**
 * USAGE_MAX_USD: plain decimal digits (no sign, no exponent), above 0 and below a billion, with at
 * most REPORT_DECIMALS digits after the point, as a report's `usd` must be written.
 */
function reportCap(text: string, problems: string[]): Amount {
  const fallback = amountOfText('100')!;
  const plain = new RegExp(`^(?:0|[1-9][0-9]{0,8})(?:\\.[0-9]{1,${REPORT_DECIMALS}})?$`);
  const amount = plain.test(text.trim()) ? amountOfText(text.trim()) : null;
  if (amount === null || amount.text === '0') {
    problems.push(
      `USAGE_MAX_USD must be a decimal number above 0 and below 1000000000, with at most ${REPORT_DECIMALS} digits after the point`,
    );
    return fallback;
  }
  return amount;
}

function deepFreeze<T extends object>(o: T): T {
  for (const v of Object.values(o)) if (v !== null && typeof v === 'object') deepFreeze(v as object);
  return Object.freeze(o);
}
