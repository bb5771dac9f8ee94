// Sign-in for people (docs/spec.md section 5.2.1): /auth/login sends the browser to the identity
// provider, /auth/callback signs the person in, /auth/session says who is signed in (and gives the
// page its CSRF token), /auth/logout signs out here and at the provider. Registered only when
// OIDC_ISSUER is set; these routes read cookies, no other route of this scope takes a bearer token.
import { hkdfSync } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import fastifySecureSession, { type Session } from '@fastify/secure-session';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SessionStore } from '../../engine/index.js';
import { ClaimError, identityFromClaims } from '../../policy/claims.js';
import type { AppContext } from '../context.js';
import { HttpError } from '../errors.js';
import type { LoginTransaction, RelyingParty } from '../oidc.js';
import { checkCsrf, type SessionCookies, type SignInSettings } from '../session.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The sign-in in progress, decrypted from its cookie (@fastify/secure-session). */
    signin: Session<{ transaction: LoginTransaction }>;
  }
}

export interface AuthRouteOptions {
  readonly settings: SignInSettings;
  readonly cookies: SessionCookies;
  readonly store: SessionStore;
  readonly relyingParty: RelyingParty;
}

const emptyQuery = { type: 'object', additionalProperties: false, properties: {} } as const;
// The provider's answer: RFC 6749 section 4.1.2 (code, state), 4.1.2.1 (error), RFC 9207 (iss).
// openid-client reads and checks them; this only bounds what is accepted at all.
const callbackQuery = {
  type: 'object',
  additionalProperties: true,
  properties: {
    code: { type: 'string', maxLength: 4096 },
    state: { type: 'string', maxLength: 512 },
    iss: { type: 'string', maxLength: 2048 },
    error: { type: 'string', maxLength: 256 },
  },
} as const;

/**
 * GET /auth/config, served whether sign-in is on or not: what the operator page offers (a Sign in
 * button, or the pasted token alone), known without a failed request in the browser's console.
 */
export function authConfigRoute(app: FastifyInstance, publicUrl: string | null): void {
  const body = {
    signin: publicUrl === null ? null : { login_url: `${publicUrl}/auth/login`, session_url: '/auth/session' },
  };
  app.get('/auth/config', { schema: { querystring: emptyQuery } }, async () => body);
}

/** The sign-in cookie's key: 32 bytes derived from SESSION_SECRET (RFC 5869), bound to this use. */
function loginCookieKey(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'gatehouse', 'gatehouse sign-in cookie v1', 32));
}

export async function authRoutes(app: FastifyInstance, ctx: AppContext, options: AuthRouteOptions): Promise<void> {
  const { settings, cookies, store, relyingParty } = options;
  const base = settings.publicUrl;
  const loginUrl = `${base}/auth/login`;

  // Cookies are parsed in this scope only: no other route pays for it (the operator routes read
  // the session cookie alone, session.ts).
  await app.register(fastifyCookie);
  await app.register(fastifySecureSession, {
    sessionName: 'signin',
    cookieName: cookies.login.name,
    key: loginCookieKey(settings.sessionSecret),
    expiry: cookies.login.maxAgeSec,
    cookie: { ...cookies.login.options },
  });

  const sessionSecret = (request: FastifyRequest): string | undefined => request.cookies[cookies.session.name];
  const clearSession = (reply: FastifyReply): void => {
    const { maxAge: _maxAge, ...attributes } = cookies.session.options;
    reply.clearCookie(cookies.session.name, attributes);
  };
  const notSignedIn = (detail: string): HttpError =>
    new HttpError('unauthorized', detail, { body: { login_url: loginUrl } });

  app.get('/auth/login', { schema: { querystring: emptyQuery } }, async (request, reply) => {
    const { url, transaction } = await relyingParty.start();
    request.signin.set('transaction', transaction);
    return reply.redirect(url, 303);
  });

  app.get('/auth/callback', { schema: { querystring: callbackQuery } }, async (request, reply) => {
    const transaction = request.signin.get('transaction');
    request.signin.delete(); // one use, whatever happens next
    if (transaction === undefined) {
      throw new HttpError(
        'signin_failed',
        'no sign-in is in progress in this browser (or it took more than ten minutes): sign in again',
      );
    }
    const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
    const { claims, idToken } = await relyingParty.finish(new URL(`${base}/auth/callback${query}`), transaction);
    // The same rules as a bearer token's claims: no control or invisible characters, bounded lengths.
    let identity: ReturnType<typeof identityFromClaims>;
    try {
      identity = identityFromClaims(claims, settings.claims);
    } catch (err) {
      if (!(err instanceof ClaimError)) throw err;
      throw new HttpError(
        'signin_failed',
        `the ID token's claims cannot be used here: ${err.message.replace(/^the token/, 'it')}`,
      );
    }
    const { secret, session } = await store.create(
      {
        sub: identity.user,
        team: identity.team,
        agent: identity.agent,
        roles: identity.roles,
        name: identity.name ?? null,
        idToken,
      },
      sessionSecret(request),
    );
    request.log.info({ user: session.sub, roles: session.roles, expires_at: session.expiresAt }, 'signed in');
    reply.setCookie(cookies.session.name, secret, cookies.session.options);
    return reply.redirect(`${base}/ui`, 303);
  });

  app.get('/auth/session', { schema: { querystring: emptyQuery } }, async (request) => {
    const secret = sessionSecret(request);
    const session = secret === undefined ? null : await store.find(secret);
    if (session === null)
      throw notSignedIn(
        secret === undefined ? 'not signed in' : 'the session has ended (expired or signed out): sign in again',
      );
    return {
      sub: session.sub,
      team: session.team,
      agent: session.agent,
      name: session.name,
      roles: session.roles,
      can: { decide: session.roles.includes(ctx.approverRole) },
      csrf_token: session.csrfToken,
      expires_at: session.expiresAt,
    };
  });

  app.post('/auth/logout', async (request, reply) => {
    const secret = sessionSecret(request);
    const session = secret === undefined ? null : await store.find(secret);
    if (session === null) {
      clearSession(reply);
      throw notSignedIn('not signed in');
    }
    checkCsrf(request, session.csrfToken);
    await store.end(secret!);
    clearSession(reply);
    request.log.info({ user: session.sub }, 'signed out');
    return { signed_out: true, end_session_url: await relyingParty.endSessionUrl(session.idToken) };
  });
}
