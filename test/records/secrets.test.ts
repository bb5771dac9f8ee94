// With LOG_ARGS=true, credentials whose key names are innocent are redacted by value (docs/operations.md
// "Logs", src/policy/secrets.ts): a bearer token in a `{"name": "Authorization", "value": "Bearer …"}`
// pair, `AWS_SECRET_ACCESS_KEY=…` inside a command, a JWT, a PEM private key. Through the real
// service: its decision log line, its record in the decision store (DECISION_STORE=postgres), and
// `gatehouse cases` made from either hold none of them, and keep the rest of each string.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { runCli } from '../../src/main.js';
import { createTestApp, post, signJwt, token } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';

const POLICIES = 'test/cli/fixtures/replay/baseline';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, { out: (s) => (out += s), err: (s) => (err += s) });
  return { code, out, err };
}

// Each secret holds a canary of its own, so a leak says which one leaked.
const canary = (label: string): string => `${label}${randomBytes(12).toString('hex')}`;
const BEARER = canary('BearerCanary');
const AWS_SECRET = canary('AwsCanary/');
const JWT = signJwt({ sub: canary('jwt'), exp: 2_000_000_000 }, { key: 'another-service-secret-0123456789abcdef' });
const PEM_BODY = canary('PemCanary');
const PEM = `-----BEGIN EC PRIVATE KEY-----\n${PEM_BODY}\nMHcCAQEEIAbcdefghijklmnopqrstuvwxyz0123456789ABCDEFoAoGCCqGSM49\n-----END EC PRIVATE KEY-----`;
const SECRETS = { BEARER, AWS_SECRET, JWT, PEM_BODY };

const ARGS = {
  order: 'A1',
  headers: [
    { name: 'Authorization', value: `Bearer ${BEARER}` },
    { name: 'Accept', value: 'application/json' },
  ],
  command: `export AWS_SECRET_ACCESS_KEY=${AWS_SECRET} && aws s3 ls s3://orders`,
  note: `forwarded ${JWT} from the gateway`,
  attachment: `key follows\n${PEM}\nend of note`,
};

let db: TestDatabase;
let dir: string;
let decisionId: string;
const logs: Record<string, unknown>[] = [];
const savedUrl = process.env.DATABASE_URL;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-secrets-'));
  db = await createTestDatabase();
  const storeSql = createSql(db.url, { max: 2 });
  const app = await createTestApp({ policyDir: POLICIES, logs, logArgs: true, decisionStore: { sql: storeSql } });
  try {
    const res = await post(
      app.app,
      '/decide',
      { tool: 'lookup_order', args: ARGS, context: { upstream: `Bearer ${BEARER}` } },
      token({ sub: 'agent-s' }),
    );
    expect(res.statusCode, res.body).toBe(200);
    decisionId = (res.json() as { decision_id: string }).decision_id;
    await app.writer!.flush();
  } finally {
    await app.close();
    await storeSql.end();
  }
  process.env.DATABASE_URL = db.url;
});
afterAll(async () => {
  if (savedUrl === undefined) delete process.env.DATABASE_URL;
  else process.env.DATABASE_URL = savedUrl;
  await db?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function expectNoSecret(text: string, where: string): void {
  for (const [name, secret] of Object.entries(SECRETS)) expect(text, `${name} in ${where}`).not.toContain(secret);
}

describe('LOG_ARGS=true redacts credentials by value', () => {
  it('the decision log line: each credential replaced by its marker, the rest of each string kept', () => {
    const line = logs.find((l) => l.msg === 'decision' && l.decision_id === decisionId)!;
    expect(line).toBeDefined();
    expectNoSecret(JSON.stringify(logs), 'the log');
    expect(line.args).toEqual({
      order: 'A1',
      headers: [
        { name: 'Authorization', value: '[redacted]' },
        { name: 'Accept', value: 'application/json' },
      ],
      command: 'export AWS_SECRET_ACCESS_KEY=[redacted:aws_secret_key] && aws s3 ls s3://orders',
      note: 'forwarded [redacted:jwt] from the gateway',
      attachment: 'key follows\n[redacted:private_key]\nend of note',
    });
    expect(line.context).toEqual({ upstream: 'Bearer [redacted:bearer]' });
  });

  it('the stored record, as the database holds it and as GET /decisions reads it', async () => {
    const [row] = await db.sql<
      { args: string; context: string }[]
    >`select args::text, context::text from decisions where id = ${decisionId}::uuid`;
    expect(row).toBeDefined();
    expectNoSecret(`${row!.args}${row!.context}`, 'the stored record');
    expect(row!.args).toContain('[redacted:private_key]');
  });

  it('gatehouse cases, from the store and from the log, prints a case without them', async () => {
    const fromStore = await run('cases', '--from-decision', decisionId);
    expect(fromStore.code, fromStore.err).toBe(0);
    expectNoSecret(fromStore.out, 'cases --from-decision');
    expect(fromStore.out).toContain('[redacted:aws_secret_key] && aws s3 ls s3://orders');
    const logFile = join(dir, 'decisions.jsonl');
    writeFileSync(logFile, `${logs.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const fromLog = await run('cases', '--from', logFile, '--id', decisionId);
    expect(fromLog.code, fromLog.err).toBe(0);
    expectNoSecret(fromLog.out, 'cases --from');
    expect(fromLog.out).toContain('[redacted:jwt]');
  });
});
