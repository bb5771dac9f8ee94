// Sign-in for people against a real OpenID provider (oidc-provider) on loopback, over real HTTP,
// every redirect followed by hand (docs/spec.md section 5.2.1, docs/security.md "Sign-in"): the
// authorization code flow with PKCE, the session cookie and its attributes, the CSRF token on every
// state-changing request, roles from the ID token, logout here and at the provider, an expired, a
// tampered and a replayed session, and every callback that must be refused.
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql } from '../../src/db/connect.js';
import { approverToken, createTestApp, token, type TestApp } from '../helpers/app.js';
import { expectProblemJson, listenLoopback, type AnyResponse } from '../helpers/http.js';
import { assertMatchesOpenApi, findOperation, openApiOperations } from '../helpers/openapi.js';
import {
  authenticateAtProvider,
  browse,
  CLIENT_ID,
  CLIENT_SECRET,
  CookieJar,
  startProvider,
  type TestProvider,
} from '../helpers/oidc.js';

const PUBLIC_URL = 'https://gatehouse.test';
const SESSION_COOKIE = '__Host-gatehouse-session';
const LOGIN_COOKIE = '__Host-gatehouse-login';
const TTL_MS = 8 * 3_600_000;

const ACCOUNTS = {
  alice: { roles: ['approver'], team: 'ops', name: 'Alice Liddell' },
  bob: { roles: [], team: 'support' },
  // A bidi override in a claim: the same rule as a bearer token's claims refuses it.
  mallory: { roles: ['approver'], team: 'ops\u202Eevil' },
  // A roles claim of the wrong type.
  carol: { roles: 'approver', team: 'ops' },
};

let provider: TestProvider;
let t: TestApp;
let base: string;

const settings = (issuer: string) => ({
  oidc: { issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, scopes: 'openid', rolesClaim: 'roles' },
  publicUrl: PUBLIC_URL,
  sessionSecret: 'session-secret-for-tests-0123456789abcdef',
  sessionTtlMs: TTL_MS,
  claims: { team: 'team', agent: 'agent', roles: 'roles' },
});

beforeAll(async () => {
  provider = await startProvider({ publicUrl: PUBLIC_URL, accounts: ACCOUNTS, claims: ['roles', 'team', 'name'] });
  t = await createTestApp({ env: 'prod', database: true, signin: settings(provider.issuer) });
  base = `http://127.0.0.1:${await listenLoopback(t.app)}`;
});
afterAll(async () => {
  await t?.close();
  await provider?.close();
});

/** Gatehouse's public address, as this test reaches it (the provider only knows PUBLIC_URL). */
const local = (url: string): string => url.replace(PUBLIC_URL, base);

/** The sign-in operations' statuses seen, each response checked against openapi.yaml. */
const covered = new Set<string>();

/** The response as the problem helpers read it, after checking it against openapi.yaml. */
async function asAny(res: Response, method = 'GET'): Promise<AnyResponse> {
  const url = new URL(res.url);
  const body = await res.text();
  const headers = Object.fromEntries(res.headers);
  assertMatchesOpenApi(method, `${url.pathname}${url.search}`, res.status, headers['content-type'], body, headers);
  covered.add(`${method.toLowerCase()} ${findOperation(method, url.pathname).path} ${res.status}`);
  return { statusCode: res.status, headers, body };
}

interface SessionBody {
  sub: string;
  team: string | null;
  agent: string | null;
  name: string | null;
  roles: string[];
  can: { decide: boolean };
  csrf_token: string;
  expires_at: string;
}

interface SignedIn {
  jar: CookieJar;
  idp: CookieJar;
  session: SessionBody;
  loginCookie: string;
  sessionCookie: string;
  authorizationUrl: URL;
  callback: URL;
}

/** /auth/login → the provider's login (and consent) → /auth/callback → GET /auth/session. */
async function startLogin(jar: CookieJar): Promise<{ authorizationUrl: URL; setCookie: string }> {
  const login = await browse(jar, `${base}/auth/login`);
  expect((await asAny(login.clone())).statusCode).toBe(303);
  const setCookie = login.headers.getSetCookie().find((c) => c.startsWith(`${LOGIN_COOKIE}=`));
  expect(setCookie).toBeDefined();
  return { authorizationUrl: new URL(login.headers.get('location')!), setCookie: setCookie! };
}

async function signIn(account: string, idp = new CookieJar()): Promise<SignedIn> {
  const jar = new CookieJar();
  const { authorizationUrl, setCookie: loginCookie } = await startLogin(jar);
  const callback = await authenticateAtProvider(idp, authorizationUrl.href, account, PUBLIC_URL);
  const done = await browse(jar, local(callback.href));
  expect((await asAny(done.clone())).statusCode).toBe(303);
  expect(done.headers.get('location')).toBe(`${PUBLIC_URL}/ui`);
  const sessionCookie = done.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  expect(sessionCookie).toBeDefined();
  // The sign-in cookie is used once: the callback clears it.
  expect(jar.get(LOGIN_COOKIE)).toBeUndefined();
  const res = await browse(jar, `${base}/auth/session`);
  expect((await asAny(res.clone())).statusCode).toBe(200);
  return {
    jar,
    idp,
    session: (await res.json()) as SessionBody,
    loginCookie,
    sessionCookie: sessionCookie!,
    authorizationUrl,
    callback,
  };
}

/** A pending approval filed by an agent with its bearer token: a refund over 100. */
async function pendingApproval(): Promise<string> {
  const res = await fetch(`${base}/approvals`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token({ sub: `agent-${randomUUID()}`, team: 'support', agent: 'bot' })}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ tool: 'refund', args: { order: `O-${randomUUID().slice(0, 8)}`, amount: 120 } }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

/** A POST with the browser's cookies, the way the page sends it. */
function postWithSession(jar: CookieJar, path: string, body: unknown, csrf?: string): Promise<Response> {
  return browse(jar, `${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(csrf === undefined ? {} : { 'x-csrf-token': csrf }) },
    body: JSON.stringify(body),
  });
}

const attributesOf = (setCookie: string): string[] =>
  setCookie
    .split(';')
    .slice(1)
    .map((a) => a.trim().toLowerCase());

describe('signing in (authorization code + PKCE, real provider)', () => {
  it('sends state, nonce and an S256 code challenge, and lands on /ui with a Secure, HttpOnly, SameSite=Strict session cookie', async () => {
    const before = provider.authorizationRequests.length;
    const s = await signIn('alice');
    const sent = provider.authorizationRequests.slice(before).at(-1)!;
    expect(sent.searchParams.get('response_type')).toBe('code');
    expect(sent.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(sent.searchParams.get('redirect_uri')).toBe(`${PUBLIC_URL}/auth/callback`);
    expect(sent.searchParams.get('scope')).toBe('openid');
    expect(sent.searchParams.get('code_challenge_method')).toBe('S256');
    expect(sent.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sent.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(sent.searchParams.get('nonce')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    // The callback carried the state back, and the issuer (RFC 9207), which openid-client checks.
    expect(s.callback.searchParams.get('state')).toBe(sent.searchParams.get('state'));
    expect(s.callback.searchParams.get('iss')).toBe(provider.issuer);

    const session = attributesOf(s.sessionCookie);
    expect(session).toEqual(
      expect.arrayContaining(['httponly', 'secure', 'samesite=strict', 'path=/', `max-age=${TTL_MS / 1000}`]),
    );
    expect(session.some((a) => a.startsWith('domain='))).toBe(false); // __Host-: this host only
    expect(s.jar.get(SESSION_COOKIE)).toMatch(/^[A-Za-z0-9_-]{43}$/); // a random secret, no data
    // The sign-in cookie must come back on the provider's cross-site redirect: Lax, ten minutes.
    expect(attributesOf(s.loginCookie)).toEqual(
      expect.arrayContaining(['httponly', 'secure', 'samesite=lax', 'path=/', 'max-age=600']),
    );
    // Encrypted: neither the state, the nonce nor the PKCE verifier can be read from it.
    const loginValue = decodeURIComponent(s.loginCookie.split(';')[0]!.slice(LOGIN_COOKIE.length + 1));
    expect(loginValue).not.toContain(sent.searchParams.get('state'));
    expect(loginValue).not.toContain(sent.searchParams.get('nonce'));

    expect(s.session).toMatchObject({
      sub: 'alice',
      team: 'ops',
      agent: null,
      roles: ['approver'],
      can: { decide: true },
    });
    expect(s.session.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const expiresIn = Date.parse(s.session.expires_at) - Date.now();
    expect(expiresIn).toBeGreaterThan(TTL_MS - 60_000);
    expect(expiresIn).toBeLessThanOrEqual(TTL_MS + 1000);
  });

  it('the session reads approvals and grants with the CSRF token; without it (or with another) the grant is 403 and nothing changes', async () => {
    const s = await signIn('alice');
    const id = await pendingApproval();
    const list = await browse(s.jar, `${base}/approvals?status=pending&limit=200`);
    expect(list.status).toBe(200);
    expect(((await list.json()) as { items: { id: string }[] }).items.map((a) => a.id)).toContain(id);
    const one = await browse(s.jar, `${base}/approvals/${id}`);
    expect(one.status).toBe(200);
    // What the page asks first, and its live feed, open with the session too.
    const me = await browse(s.jar, `${base}/me`);
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ sub: 'alice', can: { decide: true } });
    // The ID token's name, kept with the session: shown beside the sub, never decided on.
    expect(s.session).toMatchObject({ sub: 'alice', name: 'Alice Liddell' });
    expect(await (await browse(s.jar, `${base}/me`)).json()).toMatchObject({ name: 'Alice Liddell' });
    const stream = await fetch(`${base}/approvals/stream`, { headers: { cookie: s.jar.header(base)! } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await stream.body?.cancel();

    const missing = expectProblemJson(
      await asAny(await postWithSession(s.jar, `/approvals/${id}/grant`, { note: 'ok' }), 'POST'),
      403,
      'csrf_rejected',
    );
    expect(missing.detail).toMatch(/X-CSRF-Token/);
    expectProblemJson(
      await asAny(await postWithSession(s.jar, `/approvals/${id}/grant`, { note: 'ok' }, 'A'.repeat(43)), 'POST'),
      403,
      'csrf_rejected',
    );
    expectProblemJson(
      await asAny(await postWithSession(s.jar, `/approvals/${id}/deny`, {}, s.session.csrf_token.slice(1)), 'POST'),
      403,
      'csrf_rejected',
    );
    // Another session's token is not this one's.
    const other = await signIn('alice');
    expectProblemJson(
      await asAny(await postWithSession(s.jar, `/approvals/${id}/grant`, {}, other.session.csrf_token), 'POST'),
      403,
      'csrf_rejected',
    );
    // Twice is ambiguous, like two Authorization headers.
    const twice = await fetch(`${base}/approvals/${id}/grant`, {
      method: 'POST',
      headers: [
        ['cookie', s.jar.header(base)!],
        ['content-type', 'application/json'],
        ['x-csrf-token', s.session.csrf_token],
        ['x-csrf-token', s.session.csrf_token],
      ],
      body: '{}',
    });
    expectProblemJson(await asAny(twice, 'POST'), 403, 'csrf_rejected');
    expect(((await (await browse(s.jar, `${base}/approvals/${id}`)).json()) as { status: string }).status).toBe(
      'pending',
    );

    const granted = await postWithSession(
      s.jar,
      `/approvals/${id}/grant`,
      { note: 'checked the order' },
      s.session.csrf_token,
    );
    expect(granted.status).toBe(200);
    expect(await granted.json()).toMatchObject({
      id,
      status: 'granted',
      decided_by: 'alice',
      decision_note: 'checked the order',
    });
  });

  it('a person without the approver role: the session says so, a grant is 403 forbidden, the list holds only their own', async () => {
    const s = await signIn('bob');
    expect(s.session).toMatchObject({ sub: 'bob', team: 'support', roles: [], can: { decide: false } });
    const id = await pendingApproval();
    expectProblemJson(
      await asAny(await postWithSession(s.jar, `/approvals/${id}/grant`, {}, s.session.csrf_token), 'POST'),
      403,
      'forbidden',
    );
    expectProblemJson(
      await asAny(await postWithSession(s.jar, `/approvals/${id}/deny`, {}, s.session.csrf_token), 'POST'),
      403,
      'forbidden',
    );
    const list = await browse(s.jar, `${base}/approvals?status=pending`);
    expect(((await list.json()) as { items: unknown[] }).items).toEqual([]);
    expect((await browse(s.jar, `${base}/approvals/${id}`)).status).toBe(404);
  });

  it("claims are checked as a bearer token's are: a bidi override, or roles that are not an array, refuse the sign-in", async () => {
    for (const [account, claim] of [
      ['mallory', 'team'],
      ['carol', 'roles'],
    ] as const) {
      const jar = new CookieJar();
      const { authorizationUrl } = await startLogin(jar);
      const callback = await authenticateAtProvider(new CookieJar(), authorizationUrl.href, account, PUBLIC_URL);
      const res = await browse(jar, local(callback.href));
      const problem = expectProblemJson(await asAny(res), 400, 'signin_failed');
      expect(problem.detail).toContain(`"${claim}"`);
      expect(problem.detail).not.toContain('\u202E');
      expect(jar.get(SESSION_COOKIE)).toBeUndefined();
    }
  });
});

describe('what the session cookie opens', () => {
  it("only the operator page's routes: /decide, filing, cancelling, /tools and /policies still need a bearer token", async () => {
    const s = await signIn('alice');
    const id = await pendingApproval();
    const csrf = { 'x-csrf-token': s.session.csrf_token, 'content-type': 'application/json' };
    const refused: [string, Promise<Response>][] = [
      [
        'POST',
        browse(s.jar, `${base}/decide`, {
          method: 'POST',
          headers: csrf,
          body: JSON.stringify({ tool: 'refund', args: { order: 'O-1', amount: 1 } }),
        }),
      ],
      [
        'POST',
        browse(s.jar, `${base}/approvals`, {
          method: 'POST',
          headers: csrf,
          body: JSON.stringify({ tool: 'refund', args: { order: 'O-1', amount: 120 } }),
        }),
      ],
      ['POST', browse(s.jar, `${base}/approvals/${id}/cancel`, { method: 'POST', headers: csrf, body: '{}' })],
      ['GET', browse(s.jar, `${base}/tools`)],
      ['GET', browse(s.jar, `${base}/policies`)],
    ];
    for (const [method, res] of refused) expectProblemJson(await asAny(await res, method), 401, 'unauthorized');
  });

  it('a bearer token is read as before, cookie or not: its own identity, and no CSRF token asked', async () => {
    const s = await signIn('alice');
    const id = await pendingApproval();
    // An agent's token with the operator's cookie beside it: the agent's view (its own approvals only).
    const asAgent = await browse(s.jar, `${base}/approvals/${id}`, {
      headers: { authorization: `Bearer ${token({ sub: 'someone-else' })}` },
    });
    expect(asAgent.status).toBe(404);
    const granted = await browse(s.jar, `${base}/approvals/${id}/grant`, {
      method: 'POST',
      headers: { authorization: `Bearer ${approverToken('operator-with-token')}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(granted.status).toBe(200);
    expect(await granted.json()).toMatchObject({ decided_by: 'operator-with-token' });
  });
});

describe('the end of a session', () => {
  it("logout needs the CSRF token, ends the session everywhere (a copy of the cookie is refused) and sends the browser to the provider's end_session_endpoint", async () => {
    const s = await signIn('alice');
    const copy = s.jar.header(base)!;
    expectProblemJson(
      await asAny(await browse(s.jar, `${base}/auth/logout`, { method: 'POST' }), 'POST'),
      403,
      'csrf_rejected',
    );
    expect((await browse(s.jar, `${base}/auth/session`)).status).toBe(200); // still signed in

    const out = await browse(s.jar, `${base}/auth/logout`, {
      method: 'POST',
      headers: { 'x-csrf-token': s.session.csrf_token },
    });
    expect((await asAny(out.clone(), 'POST')).statusCode).toBe(200);
    const cleared = out.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=;`));
    expect(cleared).toBeDefined();
    expect(attributesOf(cleared!)).toEqual(expect.arrayContaining(['max-age=0', 'path=/', 'secure']));
    expect(s.jar.get(SESSION_COOKIE)).toBeUndefined();
    const body = (await out.json()) as { signed_out: boolean; end_session_url: string };
    expect(body.signed_out).toBe(true);
    const end = new URL(body.end_session_url);
    expect(`${end.origin}${end.pathname}`).toBe(`${provider.issuer}/session/end`);
    expect(end.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(end.searchParams.get('post_logout_redirect_uri')).toBe(`${PUBLIC_URL}/ui`);
    expect(end.searchParams.get('id_token_hint')).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

    // The cookie as it was before logout no longer authenticates anything.
    for (const path of ['/auth/session', '/approvals?status=pending']) {
      const res = await fetch(`${base}${path}`, { headers: { cookie: copy } });
      const problem = expectProblemJson(await asAny(res), 401, 'unauthorized');
      expect(problem.detail).toMatch(/sign in again/);
    }
    const replayedLogout = await fetch(`${base}/auth/logout`, {
      method: 'POST',
      headers: { cookie: copy, 'x-csrf-token': s.session.csrf_token },
    });
    expectProblemJson(await asAny(replayedLogout, 'POST'), 401, 'unauthorized');

    // The provider accepts the logout request (its confirmation form, then back to the page).
    const confirm = await browse(s.idp, body.end_session_url);
    expect(confirm.status).toBe(200);
    const html = await confirm.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)![1]!;
    const fields = Object.fromEntries(
      [...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    const done = await browse(s.idp, new URL(action, provider.issuer).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...fields, logout: 'yes' }).toString(),
    });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`${PUBLIC_URL}/ui`);
    expect(provider.endSessionRequests.length).toBeGreaterThan(0);
  });

  it('an expired session is 401 on every route, and /auth/session then offers the login URL', async () => {
    const s = await signIn('alice');
    const secret = s.jar.get(SESSION_COOKIE)!;
    const key = `sha256:${createHash('sha256').update(secret).digest('hex')}`;
    await t.db!
      .sql`update operator_sessions set created_at = now() - interval '9 hours', expires_at = now() - interval '1 second' where id = ${key}`;
    const id = await pendingApproval();
    const session = expectProblemJson(await asAny(await browse(s.jar, `${base}/auth/session`)), 401, 'unauthorized');
    expect(session.login_url).toBe(`${PUBLIC_URL}/auth/login`);
    expectProblemJson(await asAny(await browse(s.jar, `${base}/approvals`)), 401, 'unauthorized');
    expectProblemJson(
      await asAny(await postWithSession(s.jar, `/approvals/${id}/grant`, {}, s.session.csrf_token), 'POST'),
      401,
      'unauthorized',
    );
  });

  it('a tampered, foreign or malformed session cookie is 401, never an error', async () => {
    const s = await signIn('alice');
    const secret = s.jar.get(SESSION_COOKIE)!;
    const flipped = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    for (const value of [flipped, 'x', `${secret}x`, '%ZZ', '', 'A'.repeat(43)]) {
      const res = await fetch(`${base}/approvals`, { headers: { cookie: `${SESSION_COOKIE}=${value}` } });
      expectProblemJson(await asAny(res), 401, 'unauthorized');
    }
    // The same secret under the cookie name of a plain-http deployment is no session of this one.
    const renamed = await fetch(`${base}/approvals`, { headers: { cookie: `gatehouse-session=${secret}` } });
    expectProblemJson(await asAny(renamed), 401, 'unauthorized');
    expect((await fetch(`${base}/auth/session`)).status).toBe(401);
  });
});

describe('callbacks that are refused', () => {
  it("a state that is not this browser's, no sign-in in progress, a replayed callback", async () => {
    const mine = new CookieJar();
    await startLogin(mine);
    const theirs = new CookieJar();
    const { authorizationUrl } = await startLogin(theirs);
    const callback = await authenticateAtProvider(new CookieJar(), authorizationUrl.href, 'alice', PUBLIC_URL);
    // Someone else's callback in my browser (login CSRF): my sign-in cookie holds another state.
    const crossed = expectProblemJson(await asAny(await browse(mine, local(callback.href))), 400, 'signin_failed');
    expect(crossed.detail).toMatch(/did not pass the checks/);
    expect(mine.get(SESSION_COOKIE)).toBeUndefined();
    // No sign-in cookie at all.
    const none = expectProblemJson(
      await asAny(await fetch(local(callback.href), { redirect: 'manual' })),
      400,
      'signin_failed',
    );
    expect(none.detail).toMatch(/no sign-in is in progress/);
    // The rightful browser signs in once; the same callback again is refused (its cookie is spent).
    expect((await browse(theirs, local(callback.href))).status).toBe(303);
    const session = theirs.get(SESSION_COOKIE);
    theirs.set(LOGIN_COOKIE, 'stale');
    expectProblemJson(await asAny(await browse(theirs, local(callback.href))), 400, 'signin_failed');
    expect(theirs.get(SESSION_COOKIE)).toBe(session);
  });

  it('an ID token minted for another nonce is refused', async () => {
    const jar = new CookieJar();
    const { authorizationUrl } = await startLogin(jar);
    authorizationUrl.searchParams.set('nonce', 'a-nonce-this-browser-never-chose');
    const callback = await authenticateAtProvider(new CookieJar(), authorizationUrl.href, 'alice', PUBLIC_URL);
    const problem = expectProblemJson(await asAny(await browse(jar, local(callback.href))), 400, 'signin_failed');
    expect(problem.detail).toMatch(/did not pass the checks/);
    expect(jar.get(SESSION_COOKIE)).toBeUndefined();
  });

  it("PKCE is enforced: a code issued for another code challenge cannot be redeemed with this browser's verifier", async () => {
    const jar = new CookieJar();
    const { authorizationUrl } = await startLogin(jar);
    const otherChallenge = createHash('sha256')
      .update('a verifier this browser never held, long enough to count')
      .digest('base64url');
    authorizationUrl.searchParams.set('code_challenge', otherChallenge);
    const callback = await authenticateAtProvider(new CookieJar(), authorizationUrl.href, 'alice', PUBLIC_URL);
    const problem = expectProblemJson(await asAny(await browse(jar, local(callback.href))), 400, 'signin_failed');
    expect(problem.detail).toContain('(invalid_grant)');
    expect(jar.get(SESSION_COOKIE)).toBeUndefined();
  });

  it('the provider refusing the sign-in (error=access_denied) is said so, by its code only', async () => {
    const jar = new CookieJar();
    const { authorizationUrl } = await startLogin(jar);
    const state = authorizationUrl.searchParams.get('state')!;
    const url = `${base}/auth/callback?error=access_denied&error_description=${encodeURIComponent('<b>no</b>')}&state=${state}&iss=${encodeURIComponent(provider.issuer)}`;
    const problem = expectProblemJson(await asAny(await browse(jar, url)), 400, 'signin_failed');
    expect(problem.detail).toBe('the identity provider refused the sign-in (access_denied): sign in again');
  });
});

describe('without a reachable provider, and without OIDC', () => {
  it('/auth/login is 503 with Retry-After while the provider cannot be discovered', async () => {
    const down = await createTestApp({ env: 'prod', database: t.db!, signin: settings('http://127.0.0.1:9') });
    try {
      const downBase = `http://127.0.0.1:${await listenLoopback(down.app)}`;
      const res = await fetch(`${downBase}/auth/login`, { redirect: 'manual' });
      expect(res.headers.get('retry-after')).toBe('5');
      const problem = expectProblemJson(await asAny(res), 503, 'unavailable');
      expect(problem.detail).toMatch(/OIDC_ISSUER/);
    } finally {
      await down.app.close();
    }
  });

  it('with the session table out of reach (locked past DB_DEADLINE_MS): 503 at the callback, on /auth/session and on logout, nothing half done', async () => {
    const replica = await createTestApp({
      env: 'prod',
      database: t.db!,
      deadlineMs: 300,
      signin: settings(provider.issuer),
    });
    const blocker = createSql(t.db!.url, { max: 1 });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    try {
      const replicaBase = `http://127.0.0.1:${await listenLoopback(replica.app)}`;
      const jar = new CookieJar();
      const login = await browse(jar, `${replicaBase}/auth/login`);
      const callback = await authenticateAtProvider(
        new CookieJar(),
        login.headers.get('location')!,
        'alice',
        PUBLIC_URL,
      );
      const alive = await signIn('alice');
      await new Promise<void>((locked) => {
        void blocker.begin(async (tx) => {
          await tx`lock table operator_sessions in access exclusive mode`;
          locked();
          await held;
        });
      });
      const refused = await browse(jar, callback.href.replace(PUBLIC_URL, replicaBase));
      expectProblemJson(await asAny(refused), 503, 'unavailable');
      expect(jar.get(SESSION_COOKIE)).toBeUndefined();
      const cookie = { cookie: `${SESSION_COOKIE}=${alive.jar.get(SESSION_COOKIE)}` };
      expectProblemJson(
        await asAny(await fetch(`${replicaBase}/auth/session`, { headers: cookie })),
        503,
        'unavailable',
      );
      const out = await fetch(`${replicaBase}/auth/logout`, {
        method: 'POST',
        headers: { ...cookie, 'x-csrf-token': alive.session.csrf_token },
      });
      expectProblemJson(await asAny(out, 'POST'), 503, 'unavailable');
      release();
      // Once the database answers again, the session that could not be ended is still signed in.
      expect((await browse(alive.jar, `${base}/auth/session`)).status).toBe(200);
    } finally {
      release();
      await blocker.end();
      await replica.app.close();
    }
  });

  it('a query parameter these routes do not take is 400', async () => {
    for (const path of ['/auth/login?next=https://evil.example', '/auth/session?x=1']) {
      expectProblemJson(await asAny(await fetch(`${base}${path}`, { redirect: 'manual' })), 400, 'invalid_query');
    }
    const long = await fetch(`${base}/auth/callback?state=${'s'.repeat(600)}`, { redirect: 'manual' });
    expectProblemJson(await asAny(long), 400, 'invalid_query');
  });

  it('/auth/config says whether sign-in is on, and where it starts', async () => {
    const on = await asAny(await fetch(`${base}/auth/config`));
    expect(on.statusCode).toBe(200);
    expect(JSON.parse(on.body)).toEqual({
      signin: { login_url: `${PUBLIC_URL}/auth/login`, session_url: '/auth/session' },
    });
    expectProblemJson(await asAny(await fetch(`${base}/auth/config?x=1`)), 400, 'invalid_query');
  });

  it('with OIDC off the /auth routes do not exist but /auth/config, which says so (the page keeps to pasted tokens); cookies open nothing', async () => {
    const plain = await createTestApp({ env: 'prod' });
    try {
      expect((await plain.app.inject({ method: 'GET', url: '/auth/config' })).json()).toEqual({ signin: null });
      for (const url of ['/auth/session', '/auth/login', '/auth/callback'])
        expect((await plain.app.inject({ method: 'GET', url })).statusCode).toBe(404);
      const res = await plain.app.inject({
        method: 'GET',
        url: '/approvals',
        headers: { cookie: `${SESSION_COOKIE}=${'A'.repeat(43)}` },
      });
      expectProblemJson(res, 401, 'unauthorized');
    } finally {
      await plain.close();
    }
  });
});

describe('openapi.yaml', () => {
  it('documents every status of the sign-in routes, and each one was seen above as documented', () => {
    const documented = openApiOperations()
      .filter(({ path }) => path.startsWith('/auth/'))
      .flatMap(({ path, method, operation }) =>
        Object.keys(operation.responses ?? {}).map((status) => `${method} ${path} ${status}`),
      );
    expect(documented.length).toBeGreaterThanOrEqual(14);
    expect(documented.filter((d) => !covered.has(d))).toEqual([]);
  });
});
