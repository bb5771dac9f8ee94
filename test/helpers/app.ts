// Build a Gatehouse app for inject() tests, and sign tokens for it. Tokens are made by hand with
// node:crypto, so tests can also forge the malformed and hostile ones (alg none, key confusion).
import { createHmac, createSign, generateKeyPairSync, sign as edSign, type KeyObject } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { createApprovalWaiter } from '../../src/approvals/notify.js';
import { createApprovalService } from '../../src/approvals/service.js';
import { createApprovalStore } from '../../src/approvals/store.js';
import type { SqlOptions } from '../../src/db/connect.js';
import { createLanes } from '../../src/db/lanes.js';
import { createLimitService } from '../../src/budgets/service.js';
import {
  DEFAULT_JWT_MAX_LIFETIME_SEC,
  loadConfig,
  type ConnectionLimits,
  type JwtAlgorithm,
  type UsageSettings,
} from '../../src/config.js';
import { buildApp } from '../../src/http/app.js';
import type { AppContext } from '../../src/http/context.js';
import { createEngine, type EngineParts } from '../../src/engine/index.js';
import { createKeys } from '../../src/db/idempotency.js';
import type { JwksKeys } from '../../src/http/jwks.js';
import { createMetrics } from '../../src/engine/metrics.js';
import type { SignInSettings } from '../../src/http/session.js';
import { createLivePolicies } from '../../src/policy/live.js';
import { approvalLink, type WebhookEndpoint } from '../../src/webhooks/events.js';
import { createOutbox, queueEventsOf } from '../../src/webhooks/outbox.js';
import { createWebhookWorker, type WebhookWorker, type WebhookWorkerOptions } from '../../src/webhooks/worker.js';
import { createSessionStore } from '../../src/sessions/store.js';
import type { Sql } from 'postgres';
import { insertRecords } from '../../src/records/insert.js';
import { createDecisionWriter, type DecisionWriter } from '../../src/records/writer.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { EXAMPLE_POLICIES } from './process.js';

export { EXAMPLE_POLICIES };

export const SECRET = 'gatehouse-test-secret-0123456789abcdef';

export interface TestAppOptions {
  policyDir?: string;
  /** FAST_GRANT_SECONDS (GET /approvals/stats). */
  fastGrantSeconds?: number;
  /** SHADOW_POLICY_DIR: a set decided beside the serving one. */
  shadowPolicyDir?: string;
  env?: string | null;
  /** Give the app a fresh migrated database (approvals). */
  database?: boolean | TestDatabase;
  key?: string;
  algorithm?: JwtAlgorithm;
  /** Verify tokens against this key set instead of `key` (the caller starts and closes it). */
  jwks?: JwksKeys;
  issuer?: string | null;
  audience?: string | null;
  bodyLimit?: number;
  logArgs?: boolean;
  /** Collect log lines here (JSON objects). */
  logs?: Record<string, unknown>[];
  approvalTtlMs?: number;
  grantTtlMs?: number;
  deadlineMs?: number;
  maxPendingApprovals?: number;
  approvalMaxBytes?: number;
  deniedCooldownMs?: number;
  /** IDEMPOTENCY_MAX_KEYS and IDEMPOTENCY_MAX_BYTES (default the service's). */
  keyCaps?: { maxKeys: number; maxBytes: number };
  maxWaitsPerCaller?: number;
  maxWaits?: number;
  /** How often the budget counters of ended windows are swept (default: the service's, 60 s). */
  sweepMs?: number;
  /** The budget counters' lanes (src/db/lanes.ts): how many (default 4), or false for none (every counted call in a transaction of the pool). */
  lanes?: number | false;
  /** Options of the lanes' connections (the pool's are the database's). */
  laneOptions?: SqlOptions;
  /** POLICY_READER_ROLE as a list; default the admin and approver roles, as the service's. */
  policyReaderRoles?: readonly string[];
  /** USAGE_ROLE, USAGE_ANY_ROLE, USAGE_MAX_USD; default the service's defaults (loadConfig). */
  usage?: Partial<UsageSettings>;
  /** Timeouts and the connection cap; default the service's defaults (loadConfig). */
  connections?: Partial<ConnectionLimits>;
  /** WEBHOOKS: events are queued on transitions and, unless `worker: false`, delivered by a worker of this app. */
  webhooks?: TestWebhooks;
  /** Sign-in for people (OIDC): its settings; the session store is made on the app's database. */
  signin?: SignInSettings;
  /** DECISION_STORE=postgres on this pool (the caller's: a private server to stall, or the app database's). */
  decisionStore?: { sql: Sql; queueMax?: number; retentionMs?: number; retryMs?: number; lingerMs?: number };
}

export interface TestWebhooks extends Partial<Omit<WebhookWorkerOptions, 'endpoints'>> {
  endpoints: readonly WebhookEndpoint[];
  publicUrl?: string | null;
  /** Start a delivery worker (default true); false: events are only queued. */
  worker?: boolean;
}

/** The engine's parts, and what the routes read beside the engine (the test's handles on them). */
export type TestParts = EngineParts & {
  readonly webhooks: AppContext['webhooks'];
  readonly decisionStore: EngineParts['records'];
};

export interface TestApp {
  app: FastifyInstance;
  /** The decision store's writer, with `decisionStore`. */
  writer: DecisionWriter | null;
  ctx: TestParts;
  db: TestDatabase | null;
  /** The delivery worker, when the app has webhooks and one was started. */
  worker: WebhookWorker | null;
  close(): Promise<void>;
}

/** The engine's parts as createTestApp builds them, without an app: for tests of the engine itself. */
export interface TestEngineParts {
  parts: EngineParts;
  webhooks: AppContext['webhooks'];
  db: TestDatabase | null;
  writer: DecisionWriter | null;
  worker: WebhookWorker | null;
  /** Closes what was opened here (not the app). */
  close(): Promise<void>;
}

export async function createTestParts(options: TestAppOptions = {}): Promise<TestEngineParts> {
  const logs = options.logs;
  const log = pino(
    { level: logs ? 'info' : 'silent' },
    { write: (line: string) => logs?.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const policies = await createLivePolicies(
    options.policyDir ?? EXAMPLE_POLICIES,
    options.env === undefined ? 'prod' : options.env,
  );
  const shadow =
    options.shadowPolicyDir === undefined
      ? null
      : await createLivePolicies(options.shadowPolicyDir, options.env === undefined ? 'prod' : options.env);
  let db: TestDatabase | null = null;
  let approvals: EngineParts['approvals'] = null;
  let limits: EngineParts['limits'] = null;
  let keys: EngineParts['keys'] = null;
  let webhooks: AppContext['webhooks'] = null;
  let worker: WebhookWorker | null = null;
  const hooks = options.webhooks;
  if (options.database) {
    db = options.database === true ? await createTestDatabase() : options.database;
    const publicUrl = hooks?.publicUrl ?? null;
    const store = createApprovalStore(db.sql, {
      ...(hooks !== undefined
        ? queueEventsOf({ endpoints: hooks.endpoints, link: (id: string) => approvalLink(publicUrl, id) })
        : {}),
      approvalTtlMs: options.approvalTtlMs ?? 86_400_000,
      grantTtlMs: options.grantTtlMs ?? 3_600_000,
      deadlineMs: options.deadlineMs ?? 5_000,
      ...(options.maxPendingApprovals !== undefined ? { maxPendingPerRequester: options.maxPendingApprovals } : {}),
      ...(options.approvalMaxBytes !== undefined ? { maxArgsBytes: options.approvalMaxBytes } : {}),
      ...(options.deniedCooldownMs !== undefined ? { deniedCooldownMs: options.deniedCooldownMs } : {}),
    });
    keys = createKeys(db.sql, {
      deadlineMs: options.deadlineMs ?? 5_000,
      ...(options.keyCaps !== undefined ? { caps: options.keyCaps } : {}),
    });
    const waiter = createApprovalWaiter(db.sql, store, {
      recheckMs: 200,
      ...(options.maxWaitsPerCaller !== undefined ? { maxPerCaller: options.maxWaitsPerCaller } : {}),
      ...(options.maxWaits !== undefined ? { maxTotal: options.maxWaits } : {}),
    });
    approvals = createApprovalService(db.sql, store, waiter);
    const lanes =
      options.lanes === false
        ? undefined
        : createLanes(
            db.url,
            options.lanes ?? 4,
            options.laneOptions,
            options.decisionStore !== undefined ? insertRecords : undefined,
          );
    limits = createLimitService(db.sql, {
      deadlineMs: options.deadlineMs ?? 5_000,
      ...(options.sweepMs !== undefined ? { sweepMs: options.sweepMs } : {}),
      ...(lanes !== undefined ? { lanes } : {}),
    });
    webhooks = {
      endpoints: hooks?.endpoints ?? [],
      outbox: createOutbox(db.sql, { deadlineMs: options.deadlineMs ?? 5_000 }),
    };
  }
  const outbox = webhooks?.outbox;
  const metrics = createMetrics(policies, {
    defaultMetrics: false,
    ...(outbox !== undefined ? { webhookCounts: () => outbox.counts() } : {}),
  });
  if (db !== null && hooks !== undefined && hooks.worker !== false) {
    const { endpoints, publicUrl: _, worker: __, ...rest } = hooks;
    worker = createWebhookWorker(createOutbox(db.sql, { deadlineMs: options.deadlineMs ?? 5_000 }), db.sql, {
      timeoutMs: 2_000,
      retryForMs: 86_400_000,
      retryMinMs: 50,
      retryMaxMs: 200,
      pollMs: 50,
      ...rest,
      endpoints,
      onOutcome: (endpoint, outcome) => {
        metrics.webhookAttempts.inc({ endpoint, outcome });
        rest.onOutcome?.(endpoint, outcome);
      },
    });
    worker.start();
  }
  let decisionStore: EngineParts['records'] = null;
  let writer: DecisionWriter | null = null;
  if (options.decisionStore !== undefined) {
    const o = options.decisionStore;
    writer = createDecisionWriter(o.sql, {
      queueMax: o.queueMax ?? 10_000,
      retentionMs: o.retentionMs ?? 30 * 86_400_000,
      ...(o.retryMs !== undefined ? { retryMs: o.retryMs } : {}),
      ...(o.lingerMs !== undefined ? { lingerMs: o.lingerMs } : {}),
      log,
      onDrop: (reason, count) => metrics.decisionRecordsDropped.inc({ reason }, count),
      onWritten: (count) => metrics.decisionRecordsWritten.inc(count),
    });
    decisionStore = { writer, sql: o.sql };
  }
  const parts: EngineParts = {
    policies,
    shadow,
    approvals,
    limits,
    keys,
    records: decisionStore,
    metrics,
    log,
    logArgs: options.logArgs ?? false,
  };
  return {
    parts,
    webhooks,
    db,
    writer,
    worker,
    async close() {
      await writer?.close();
      await worker?.close();
      await approvals?.close();
      await limits?.close();
      if (options.database === true) await db?.drop();
    },
  };
}

export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const built = await createTestParts(options);
  const { parts, webhooks, db } = built;
  const appCtx: AppContext = {
    engine: createEngine(parts),
    auditorRole: 'auditor',
    adminRole: 'admin',
    approverRole: 'approver',
    runtimeRole: 'runtime',
    ...(options.fastGrantSeconds !== undefined ? { fastGrantSeconds: options.fastGrantSeconds } : {}),
    policyReaderRoles: options.policyReaderRoles ?? ['admin', 'approver'],
    usage: { ...loadConfig({}).usage, ...options.usage },
    webhooks,
  };
  const signin = options.signin;
  if (signin !== undefined && db === null) throw new Error('signin needs a database (the session store)');
  const app = await buildApp(appCtx, {
    ...(signin !== undefined && db !== null
      ? {
          signin: {
            settings: signin,
            store: createSessionStore(db.sql, { ttlMs: signin.sessionTtlMs, deadlineMs: options.deadlineMs ?? 5_000 }),
          },
        }
      : {}),
    bodyLimit: options.bodyLimit ?? 1_048_576,
    connections: { ...loadConfig({}).connections, ...options.connections },
    logger: parts.log,
    auth: {
      ...(options.jwks !== undefined
        ? { jwks: options.jwks }
        : { key: options.key ?? SECRET, algorithm: options.algorithm ?? 'HS256' }),
      issuer: options.issuer ?? null,
      audience: options.audience ?? null,
      clockToleranceSec: 30,
      maxLifetimeSec: DEFAULT_JWT_MAX_LIFETIME_SEC,
      claims: { team: 'team', agent: 'agent', roles: 'roles' },
    },
  });
  await app.ready();
  return {
    app,
    writer: built.writer,
    ctx: { ...parts, webhooks, decisionStore: parts.records },
    db,
    worker: built.worker,
    async close() {
      await app.close();
      await built.close();
    },
  };
}

const b64url = (data: string | Buffer): string => Buffer.from(data).toString('base64url');

/** Sign a compact JWT. `key`: the HMAC secret, or a private key for RS256/ES256/EdDSA. */
export function signJwt(
  payload: Record<string, unknown>,
  options: { key?: string | KeyObject; alg?: string; header?: Record<string, unknown> } = {},
): string {
  const alg = options.alg ?? 'HS256';
  const head = b64url(JSON.stringify({ alg, typ: 'JWT', ...options.header }));
  const body = b64url(JSON.stringify(payload));
  const input = `${head}.${body}`;
  const key = options.key ?? SECRET;
  let signature: Buffer;
  if (alg === 'none') signature = Buffer.alloc(0);
  else if (alg.startsWith('HS'))
    signature = createHmac(`sha${alg.slice(2)}`, key as string)
      .update(input)
      .digest();
  else if (alg.startsWith('RS'))
    signature = createSign(`sha${alg.slice(2)}`)
      .update(input)
      .sign(key as KeyObject);
  else if (alg.startsWith('ES'))
    signature = createSign(`sha${alg.slice(2)}`)
      .update(input)
      .sign({ key: key as KeyObject, dsaEncoding: 'ieee-p1363' });
  else if (alg === 'EdDSA') signature = edSign(null, Buffer.from(input), key as KeyObject);
  else throw new Error(`unsupported alg ${alg}`);
  return `${input}.${b64url(signature)}`;
}

/** A valid token for the test secret: sub, team, agent and roles as given, expiring in an hour. */
export function token(
  claims: { sub?: string; team?: string; agent?: string; roles?: string[]; [k: string]: unknown } = {},
): string {
  const now = Math.floor(Date.now() / 1000);
  return signJwt({ sub: 'agent-1', team: 'support', agent: 'bot', roles: [], iat: now, exp: now + 3600, ...claims });
}

export const agentToken = (sub = 'agent-1', extra: Record<string, unknown> = {}): string => token({ sub, ...extra });
export const approverToken = (sub = 'operator-1'): string => token({ sub, team: 'ops', roles: ['approver'] });
export const adminToken = (sub = 'admin-1'): string => token({ sub, team: 'ops', roles: ['admin'] });
/** The default USAGE_ROLE and USAGE_ANY_ROLE (POST /usage). */
export const USAGE_ROLE = 'usage_reporter';
export const USAGE_ANY_ROLE = 'usage_billing';
/** A caller that may read /explain and /policies (an approver, by default), with the claims given. */
export const readerToken = (claims: { sub?: string; team?: string; agent?: string; roles?: string[] } = {}): string =>
  token({ sub: 'reader-1', roles: ['approver'], ...claims });

export function bearer(t: string): Record<string, string> {
  return { authorization: `Bearer ${t}` };
}

/** POST a JSON body with a bearer token. */
export function post(app: FastifyInstance, url: string, body: unknown, tok: string = agentToken()) {
  return app.inject({
    method: 'POST',
    url,
    headers: { ...bearer(tok), 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

export function keyPairs() {
  return {
    rsa: generateKeyPairSync('rsa', { modulusLength: 2048 }),
    ec: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    ed: generateKeyPairSync('ed25519'),
  };
}
