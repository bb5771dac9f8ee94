// `gatehouse serve` with sign-in on (OIDC_ISSUER), as a real process against a real OpenID provider:
// the banner names the sign-in URL, the development session secret is generated once under
// DATA_DIR (mode 0600) and kept, so a sign-in started before a restart finishes after it, and the
// session table is migrated. Every wait is bounded.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import {
  authenticateAtProvider,
  browse,
  CLIENT_ID,
  CLIENT_SECRET,
  CookieJar,
  startProvider,
  type TestProvider,
} from '../helpers/oidc.js';
import { ensureBuilt, eventually, freeTcpPort, startServer, type ServerProcess } from '../helpers/process.js';

let db: TestDatabase;
let dataDir: string;
let provider: TestProvider;
let port: number;
let base: string;
const started: ServerProcess[] = [];

beforeAll(async () => {
  await ensureBuilt();
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'gatehouse-signin-'));
  port = await freeTcpPort();
  base = `http://127.0.0.1:${port}`;
  provider = await startProvider({ publicUrl: base, accounts: { alice: { roles: ['approver'], team: 'ops' } } });
}, 180_000);

afterAll(async () => {
  for (const s of started) await s.kill();
  await provider?.close();
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function serve(): Promise<ServerProcess> {
  const s = await startServer({
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    PORT: String(port),
    OIDC_ISSUER: provider.issuer,
    OIDC_CLIENT_ID: CLIENT_ID,
    OIDC_CLIENT_SECRET: CLIENT_SECRET,
    PUBLIC_URL: base,
  });
  started.push(s);
  return s;
}

describe('serve with OIDC_ISSUER', () => {
  it('says where to sign in, keeps its development session secret across a restart, and signs a person in', async () => {
    const first = await serve();
    const banner = await eventually('the banner', 10_000, async () =>
      first.stderr().includes('approval page') ? first.stderr() : undefined,
    );
    expect(banner).toContain(`${base}/ui (sign-in: ${base}/auth/login)`);
    const secretFile = join(dataDir, 'dev-session-secret');
    expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
    const secret = await readFile(secretFile, 'utf8');

    // A sign-in started before the restart…
    const jar = new CookieJar();
    const login = await browse(jar, `${base}/auth/login`);
    expect(login.status).toBe(303);
    first.proc.kill('SIGTERM');
    expect((await first.exited(20_000)).code).toBe(0);

    // …finishes after it: the new process decrypts the sign-in cookie with the same kept secret.
    const second = await serve();
    expect(await readFile(secretFile, 'utf8')).toBe(secret);
    const callback = await authenticateAtProvider(new CookieJar(), login.headers.get('location')!, 'alice', base);
    const done = await browse(jar, callback.href);
    expect(done.status, await done.clone().text()).toBe(303);
    expect(done.headers.get('location')).toBe(`${base}/ui`);
    const session = await browse(jar, `${base}/auth/session`);
    expect(session.status).toBe(200);
    expect(await session.json()).toMatchObject({ sub: 'alice', roles: ['approver'], can: { decide: true } });
    expect(second.stdout()).toContain('"signed in"');
  });
});
