// A real OpenID provider for sign-in tests (oidc-provider, the certified implementation), on
// loopback, with one confidential client for Gatehouse and accounts whose claims the test chooses;
// and a browser stand-in for HTTP tests: a cookie jar per origin and the provider's own login and
// consent forms (its devInteractions) filled in and posted, every redirect followed by hand.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type Configuration } from 'oidc-provider';

export const CLIENT_ID = 'gatehouse';
export const CLIENT_SECRET = 'gatehouse-client-secret-0123456789abcdef';

export interface TestProvider {
  readonly issuer: string;
  /** Every authorization request the provider received, as sent (to check state, nonce, PKCE). */
  readonly authorizationRequests: URL[];
  /** Every RP-initiated logout request (end_session) it received. */
  readonly endSessionRequests: URL[];
  close(): Promise<void>;
}

export interface ProviderOptions {
  /** The account id typed on the login form → its claims (sub is the id unless given). */
  readonly accounts: Readonly<Record<string, Record<string, unknown>>>;
  /** Gatehouse's PUBLIC_URL: the client's redirect URI is PUBLIC_URL/auth/callback. */
  readonly publicUrl: string;
  /** The claim names the ID token carries besides sub (default roles and team). */
  readonly claims?: readonly string[];
}

/** Start the provider on 127.0.0.1 (an ephemeral port). */
export async function startProvider(options: ProviderOptions): Promise<TestProvider> {
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const signingKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const claimNames = options.claims ?? ['roles', 'team'];
  const configuration: Configuration = {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${options.publicUrl}/auth/callback`],
        post_logout_redirect_uris: [`${options.publicUrl}/ui`],
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    async findAccount(_ctx, id) {
      const claims = Object.hasOwn(options.accounts, id) ? options.accounts[id] : undefined;
      if (claims === undefined) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...claims }) };
    },
    claims: { openid: ['sub', ...claimNames] },
    // The claims of the granted scopes go into the ID token itself, as company providers are set up
    // to do for a roles or groups claim (oidc-provider's default puts them in userinfo only).
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
    jwks: { keys: [{ ...signingKey, kid: 'test-key', alg: 'RS256', use: 'sig' } as never] },
  };
  const provider = new Provider(issuer, configuration);
  const authorizationRequests: URL[] = [];
  const endSessionRequests: URL[] = [];
  provider.use(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path === '/auth') authorizationRequests.push(new URL(ctx.href));
    if (ctx.path === '/session/end') endSessionRequests.push(new URL(ctx.href));
    await next();
  });
  server.on('request', provider.callback());
  return {
    issuer,
    authorizationRequests,
    endSessionRequests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

interface StoredCookie {
  name: string;
  value: string;
  path: string;
}

/** The cookies of one origin, as a browser keeps them: by name and path, sent to paths under theirs. */
export class CookieJar {
  private readonly cookies = new Map<string, StoredCookie>();

  /** Store the Set-Cookie lines of a response to `url`; an expired one is removed. */
  take(url: string, res: Response): string[] {
    const lines = res.headers.getSetCookie();
    for (const line of lines) {
      const [pair, ...attributes] = line.split(';').map((p) => p.trim());
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      let path = new URL(url).pathname.replace(/\/[^/]*$/, '') || '/';
      let expired = false;
      for (const a of attributes) {
        const [k, v = ''] = a.split('=');
        const key = k!.toLowerCase();
        if (key === 'path') path = v;
        if (key === 'max-age' && Number(v) <= 0) expired = true;
        if (key === 'expires' && Date.parse(v) <= Date.now()) expired = true;
      }
      const id = `${name};${path}`;
      if (expired) this.cookies.delete(id);
      else this.cookies.set(id, { name, value, path });
    }
    return lines;
  }

  /** The Cookie header for a request to `url`, or undefined when no cookie applies. */
  header(url: string): string | undefined {
    const path = new URL(url).pathname;
    const applies = [...this.cookies.values()].filter(
      (c) => path === c.path || path.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`),
    );
    return applies.length === 0 ? undefined : applies.map((c) => `${c.name}=${c.value}`).join('; ');
  }

  get(name: string): string | undefined {
    for (const c of this.cookies.values()) if (c.name === name) return c.value;
    return undefined;
  }

  set(name: string, value: string, path = '/'): void {
    this.cookies.set(`${name};${path}`, { name, value, path });
  }

  clear(): void {
    this.cookies.clear();
  }
}

/** A request with the jar's cookies and no redirect followed; the response's cookies go into the jar. */
export async function browse(jar: CookieJar, url: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const cookie = jar.header(url);
  if (cookie !== undefined) headers.set('cookie', cookie);
  const res = await fetch(url, { ...init, headers, redirect: 'manual' });
  jar.take(url, res);
  return res;
}

/**
 * At the provider, from the authorization URL to the redirect back to Gatehouse: follow its
 * redirects, fill in its login form with `account` (any password: devInteractions) and confirm its
 * consent form. Returns the URL the provider sends the browser to (PUBLIC_URL/auth/callback?…).
 */
export async function authenticateAtProvider(
  jar: CookieJar,
  authorizationUrl: string,
  account: string,
  publicUrl: string,
): Promise<URL> {
  let url = authorizationUrl;
  for (let step = 0; step < 20; step++) {
    if (url.startsWith(publicUrl)) return new URL(url);
    const res = await browse(jar, url);
    if (res.status >= 300 && res.status < 400) {
      url = new URL(res.headers.get('location')!, url).href;
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`the provider answered ${res.status} at ${url}: ${html.slice(0, 300)}`);
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([a-z]+)"/.exec(html)?.[1];
    if (action === undefined || prompt === undefined)
      throw new Error(`no interaction form at ${url}: ${html.slice(0, 300)}`);
    const form = new URLSearchParams(prompt === 'login' ? { prompt, login: account, password: 'any' } : { prompt });
    const posted = await browse(jar, new URL(action, url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    if (posted.status < 300 || posted.status >= 400)
      throw new Error(`the provider answered ${posted.status} to the ${prompt} form`);
    url = new URL(posted.headers.get('location')!, url).href;
  }
  throw new Error('too many steps at the provider');
}
