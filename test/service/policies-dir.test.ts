// policies/ is the users' (the README invites them to add a policy file there), so no test may
// depend on what it holds. Tests never name it (test/house.test.ts); the processes they start from
// the checkout, whose default POLICY_DIR is ./policies, take their environment from serverEnv(),
// which names POLICY_DIR (test/house.test.ts checks that every start goes through it). Here: a
// checkout whose policies/ holds a file that denies every tool, and a service started from it as the
// tests start theirs, which decides by the fixtures; the same start does read
// that file when POLICY_DIR is the default, so the first check would have seen it.
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, token } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { callJson, ensureBuilt, ROOT, type ServerProcess, startServer } from '../helpers/process.js';

// Sorts after payments.yaml: a later file never loosens (docs/policies.md), so with it loaded no
// call is allowed.
const DENY_EVERYTHING = `policy: deny-everything
version: "1"
rules:
  - id: users-deny-everything
    tools: ["*"]
    allow: false
    reason: a policy a user added to policies/
`;

let checkout: string;
let db: TestDatabase;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  await ensureBuilt();
  db = await createTestDatabase();
  // A checkout as a user has it after adding a file to policies/: the built service, its
  // dependencies and migrations, and the example policies with the user's file beside them.
  checkout = await mkdtemp(join(tmpdir(), 'gatehouse-checkout-'));
  for (const entry of ['dist', 'node_modules', 'migrations', 'package.json', 'openapi.yaml'])
    await symlink(join(ROOT, entry), join(checkout, entry));
  await mkdir(join(checkout, 'policies'));
  await cp(join(ROOT, 'test', 'cases', 'payments'), join(checkout, 'policies'), { recursive: true });
  await writeFile(join(checkout, 'policies', 'zz-deny-everything.yaml'), DENY_EVERYTHING);
}, 180_000);

afterAll(async () => {
  for (const s of servers) await s.kill();
  await db?.drop();
  if (checkout) await rm(checkout, { recursive: true, force: true });
});

/** `serve` from the checkout with the environment every test's start gets (serverEnv), plus `env`. */
async function serveFromCheckout(env: Record<string, string>): Promise<ServerProcess> {
  const s = await startServer({ DATABASE_URL: db.url, JWT_SECRET: SECRET, POLICY_ENV: 'prod', ...env }, 60_000, {
    cli: join(checkout, 'dist', 'main.js'),
    cwd: checkout,
  });
  servers.push(s);
  return s;
}

const LOOKUP = { tool: 'lookup_order', args: { order: 'A1' } };
const SUPPORT = token({ sub: 'agent-1', team: 'support' });

describe('a policy a user adds to policies/', () => {
  it('changes nothing for a service started as the tests start theirs: it decides by the fixtures', async () => {
    const s = await serveFromCheckout({});
    const decided = await callJson(s.base, 'POST', '/decide', SUPPORT, LOOKUP);
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({ decision: 'allow', rule: 'lookups' });
  }, 90_000);

  it('is what the default POLICY_DIR, ./policies, reads: the same start with it denies by that file', async () => {
    const s = await serveFromCheckout({ POLICY_DIR: './policies' });
    const decided = await callJson(s.base, 'POST', '/decide', SUPPORT, LOOKUP);
    expect(decided.status).toBe(403); // deny (docs/spec.md)
    expect(decided.body).toMatchObject({ decision: 'deny', rule: 'users-deny-everything' });
  }, 90_000);
});
