// Sign-in for people in a real browser: Debian's Chromium, driven by playwright-core (which never
// downloads a browser), through a real OpenID provider's login and consent pages (oidc-provider) to
// the operator page (/ui) of a real Gatehouse on a real PostgreSQL, and an approval granted there
// with the session cookie and its CSRF token (docs/approvals.md, "The operator page").
//
// Without Chromium the cases are reported as not run, with the command that installs it; with
// GATEHOUSE_REQUIRE_BROWSER=1 (CI sets it) a missing Chromium fails the run instead.
/// <reference lib="dom" />
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, token, type TestApp } from '../helpers/app.js';
import { CLIENT_ID, CLIENT_SECRET, startProvider, type TestProvider } from '../helpers/oidc.js';

const CHROMIUM = process.env['CHROMIUM'] ?? '/usr/bin/chromium';
const INSTALL = 'apt-get install -y chromium';
const available = existsSync(CHROMIUM);
const required = process.env['GATEHOUSE_REQUIRE_BROWSER'] === '1';
if (!available)
  console.warn(
    `test/ui: no Chromium at ${CHROMIUM}: the browser tests of sign-in are not run. Install it with: ${INSTALL}`,
  );

// Defined only when it fails: a test that is skipped whenever Chromium is there would be a skip in every run.
if (!available && required) {
  describe('Chromium is required for sign-in (GATEHOUSE_REQUIRE_BROWSER=1)', () => {
    it('is installed', () => {
      throw new Error(
        `GATEHOUSE_REQUIRE_BROWSER=1, but there is no Chromium at ${CHROMIUM}. Install it with: ${INSTALL} (or set CHROMIUM to its path)`,
      );
    });
  });
}

/** A port nothing listens on now: PUBLIC_URL must be known before the app is built. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe.skipIf(!available)(
  `sign-in in Chromium${available ? '' : ` (not run: no Chromium at ${CHROMIUM}; ${INSTALL})`}`,
  () => {
    let provider: TestProvider;
    let app: TestApp;
    let base: string;
    let browser: Browser;
    const pageErrors: string[] = [];

    beforeAll(async () => {
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      provider = await startProvider({
        publicUrl: base,
        accounts: { alice: { roles: ['approver'], team: 'ops' }, bob: { roles: [], team: 'support' } },
      });
      app = await createTestApp({
        env: 'prod',
        database: true,
        signin: {
          oidc: {
            issuer: provider.issuer,
            clientId: CLIENT_ID,
            clientSecret: CLIENT_SECRET,
            scopes: 'openid',
            rolesClaim: 'roles',
          },
          publicUrl: base,
          sessionSecret: 'session-secret-for-browser-tests-0123456789',
          sessionTtlMs: 3_600_000,
          claims: { team: 'team', agent: 'agent', roles: 'roles' },
        },
      });
      await app.app.listen({ port, host: '127.0.0.1' });
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
      });
    });
    afterAll(async () => {
      await browser?.close();
      await app?.close();
      await provider?.close();
    });

    /** A fresh browser profile (its own cookies), with page errors collected. */
    async function open(): Promise<{ context: BrowserContext; page: Page }> {
      const context = await browser.newContext();
      const page = await context.newPage();
      page.setDefaultTimeout(20_000); // a bound on a hang (two cores, other suites running), not a timing check
      // Errors of Gatehouse's page only: the provider's pages are its own (they load a web font from
      // a host this machine cannot reach).
      const ours = (): boolean => page.url().startsWith(base);
      page.on('pageerror', (e) => {
        if (ours()) pageErrors.push(String(e));
      });
      page.on('console', (m) => {
        // Chromium logs every 4xx answer to fetch as an error (GET /auth/session is 401 until signed in).
        if (
          ours() &&
          m.type() === 'error' &&
          !/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())
        )
          pageErrors.push(m.text());
      });
      return { context, page };
    }

    /** From /ui: Sign in → the provider's login form → its consent form → back on /ui, signed in. */
    async function signIn(page: Page, account: string): Promise<void> {
      await page.goto(`${base}/ui`);
      await page.click('#session-signin');
      await page.waitForURL(`${provider.issuer}/**`);
      await page.fill('input[name=login]', account);
      await page.fill('input[name=password]', 'any password');
      await page.click('button[type=submit]');
      await page.click('button[type=submit]'); // the consent form: Continue
      await page.waitForURL(`${base}/ui`);
      await page.waitForFunction(() => document.getElementById('session-who')?.textContent?.startsWith('Signed in as'));
    }

    /** An agent files a refund over 100 with its bearer token: pending, waiting for an operator. */
    async function pendingRefund(order: string): Promise<string> {
      const res = await app.app.inject({
        method: 'POST',
        url: '/approvals',
        headers: {
          authorization: `Bearer ${token({ sub: `agent-${order}`, team: 'support', agent: 'bot' })}`,
          'content-type': 'application/json',
        },
        payload: JSON.stringify({ tool: 'refund', args: { order, amount: 120 } }),
      });
      expect(res.statusCode, res.body).toBe(201);
      return (res.json() as { id: string }).id;
    }

    const statusOf = async (id: string): Promise<{ status: string; decided_by: string | null }> => {
      const res = await app.app.inject({
        method: 'GET',
        url: `/approvals/${id}`,
        headers: { authorization: `Bearer ${token({ sub: 'reader', roles: ['approver'] })}` },
      });
      return res.json() as { status: string; decided_by: string | null };
    };

    it('signs in through the provider, lands on /ui signed in, and grants an approval with the session', async () => {
      const id = await pendingRefund('BR-1');
      const { context, page } = await open();
      try {
        await page.goto(`${base}/ui`);
        // Signed out, sign-in on: the Sign in button, and the pasted-token form still there for development.
        await page.waitForSelector('#session-signin');
        expect(await page.isVisible('#token')).toBe(true);

        await signIn(page, 'alice');
        expect(await page.textContent('#session-who')).toBe('Signed in as alice (team ops).');
        expect(await page.isVisible('#token')).toBe(false);
        // The session cookie as the browser keeps it: HttpOnly (no script reads it), SameSite=Strict.
        const cookies = await context.cookies(base);
        const session = cookies.find((c) => c.name === 'gatehouse-session');
        expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
        expect(cookies.find((c) => c.name === 'gatehouse-login')).toBeUndefined(); // spent at the callback
        expect(await page.evaluate(() => document.cookie)).toBe('');

        // The page lists with the session and grants with its CSRF token, confirmed on the dialog.
        const card = page.locator(`article.approval[data-id="${id}"]`);
        await card.waitFor();
        await card.locator('textarea[data-f=note]').fill('checked with the customer');
        await card.locator('button[data-f=grant]').click();
        await page.waitForSelector('#confirm[open]');
        await page.click('#confirm-grant');
        await page.waitForFunction(
          (i) => document.querySelector(`article[data-id="${i}"]`)?.getAttribute('data-status') === 'granted',
          id,
        );
        expect(await statusOf(id)).toMatchObject({ status: 'granted', decided_by: 'alice' });
        expect(pageErrors).toEqual([]);
      } finally {
        await context.close();
      }
    });

    it('a person without the approver role is told so; signing out ends the session here and at the provider', async () => {
      const id = await pendingRefund('BR-2');
      const { context, page } = await open();
      try {
        await signIn(page, 'bob');
        expect(await page.textContent('#session-who')).toContain('does not have the approver role');
        await page.waitForFunction(() =>
          document.getElementById('status')?.textContent?.startsWith('This account (bob) cannot grant or deny'),
        );
        expect(await page.locator('article.approval').count()).toBe(0);
        const before = await context.cookies(base);
        expect(before.some((c) => c.name === 'gatehouse-session')).toBe(true);

        await page.click('#session-signout');
        // The provider asks to confirm its own sign-out, then sends the browser back to /ui.
        await page.waitForURL(`${provider.issuer}/session/end**`);
        await page.click('button[name=logout][value=yes]');
        await page.waitForURL(`${base}/ui`);
        await page.waitForSelector('#session-signin');
        expect((await context.cookies(base)).some((c) => c.name === 'gatehouse-session')).toBe(false);
        expect(await statusOf(id)).toMatchObject({ status: 'pending' });

        // Signing in again needs the provider's login form again: its session ended too.
        await page.click('#session-signin');
        await page.waitForSelector('input[name=login]');
        expect(pageErrors).toEqual([]);
      } finally {
        await context.close();
      }
    });
  },
);
