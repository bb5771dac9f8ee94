// The signed-in session of a person (docs/security.md "Sign-in"): its cookies, which routes accept
// it, and the check of a request that presents it. The session itself is a row of the session
// store; the browser holds only its secret, in an HttpOnly cookie. A request that carries a bearer
// token is never read as a session request (auth.ts decides it, as before sign-in existed).
import { timingSafeEqual } from 'node:crypto';
import type { CookieSerializeOptions } from '@fastify/cookie';
import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Identity } from '../policy/model.js';
import type { OperatorSession, SessionStore } from '../engine/index.js';
import { HttpError } from './errors.js';
import { headerCount } from './headers.js';

/**
 * The routes a session may call: what the operator page reads and decides. Everything else
 * (`/decide`, filing or withdrawing an approval, `/explain`, `/policies`, `/tools`, `/admin/…`) is
 * for hosts and agents, with a bearer token: a cookie the browser adds by itself never reaches them.
 * Keyed by method and route pattern; HEAD is read as GET.
 */
export const SESSION_ROUTES: ReadonlySet<string> = new Set([
  'GET /me',
  'GET /approvals',
  'GET /approvals/stream',
  'GET /approvals/stats',
  'GET /approvals/:id',
  'POST /approvals/:id/grant',
  'POST /approvals/:id/deny',
]);

/** The header that carries the session's CSRF token on every state-changing request. */
export const CSRF_HEADER = 'x-csrf-token';

/** Methods that change nothing (RFC 9110 section 9.2.1): no CSRF token needed. */
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What the sign-in needs from the configuration, resolved (the session secret generated in development). */
export interface SignInSettings {
  readonly oidc: NonNullable<Config['oidc']>;
  readonly publicUrl: string;
  /** SESSION_SECRET, or the development one: the key of the sign-in cookie. */
  readonly sessionSecret: string;
  readonly sessionTtlMs: number;
  /** TEAM_CLAIM and AGENT_CLAIM, and OIDC_ROLES_CLAIM as the roles claim. */
  readonly claims: Config['claims'];
}

export interface SessionCookies {
  /** The session's cookie: the store's secret, SameSite=Strict, for SESSION_TTL. */
  readonly session: { readonly name: string; readonly options: CookieSerializeOptions };
  /** The sign-in in progress (state, nonce, PKCE verifier, encrypted): SameSite=Lax, ten minutes. */
  readonly login: { readonly name: string; readonly options: CookieSerializeOptions; readonly maxAgeSec: number };
}

/** How long a sign-in may take at the provider, from /auth/login to /auth/callback. */
export const LOGIN_MAX_AGE_SEC = 600;

/**
 * The cookies' names and attributes. Over https both are Secure and carry the `__Host-` prefix, so
 * no other host (a sibling subdomain) and no plain-http page can set or overwrite them (RFC 6265bis
 * section 4.1.3.2). The session cookie is SameSite=Strict: no request another site starts carries
 * it, not even a link followed to the page (the page is static; its own requests are same-site).
 * The sign-in cookie must come back on the provider's redirect to /auth/callback, a top-level
 * navigation started by another site: that is what Lax allows, and Strict would not.
 */
export function sessionCookies(publicUrl: string, ttlMs: number): SessionCookies {
  const secure = publicUrl.startsWith('https://');
  const prefix = secure ? '__Host-' : '';
  const base = { path: '/', httpOnly: true, secure } as const;
  return {
    session: {
      name: `${prefix}gatehouse-session`,
      options: { ...base, sameSite: 'strict', maxAge: Math.floor(ttlMs / 1000) },
    },
    login: {
      name: `${prefix}gatehouse-login`,
      options: { ...base, sameSite: 'lax', maxAge: LOGIN_MAX_AGE_SEC },
      maxAgeSec: LOGIN_MAX_AGE_SEC,
    },
  };
}

/** The identity a session stands for: the claims it was signed in with, checked then (src/policy/claims.ts). */
export function sessionIdentity(session: OperatorSession): Identity {
  return Object.freeze({
    user: session.sub,
    team: session.team,
    agent: session.agent,
    roles: session.roles,
    ...(session.name === null ? {} : { name: session.name }),
    claims: Object.freeze({ sub: session.sub }),
  });
}

export interface SessionAuthenticator {
  /** Whether this request is to be read as a session request: no Authorization, a session route, the cookie present. */
  applies(request: FastifyRequest): boolean;
  /** The session's identity (set on the request), or 401; a state-changing request without the right CSRF token is 403. */
  authenticate(request: FastifyRequest): Promise<Identity>;
}

export function createSessionAuthenticator(
  store: SessionStore,
  cookies: SessionCookies,
  parseCookie: (header: string) => Record<string, string | undefined>,
): SessionAuthenticator {
  const name = cookies.session.name;
  const secretOf = (request: FastifyRequest): string | undefined => {
    const header = request.headers.cookie;
    return header === undefined ? undefined : parseCookie(header)[name];
  };
  return {
    applies(request) {
      if (request.headers.authorization !== undefined) return false;
      const method = request.method === 'HEAD' ? 'GET' : request.method;
      if (!SESSION_ROUTES.has(`${method} ${request.routeOptions.url}`)) return false;
      // A cheap look before parsing: most requests to these routes carry no cookie at all.
      return request.headers.cookie?.includes(name) === true && secretOf(request) !== undefined;
    },
    async authenticate(request) {
      const secret = secretOf(request) ?? '';
      const session = await store.find(secret);
      if (session === null)
        throw new HttpError('unauthorized', 'the session has ended (expired or signed out): sign in again');
      if (!SAFE_METHODS.has(request.method)) checkCsrf(request, session.csrfToken);
      const identity = sessionIdentity(session);
      request.identity = identity;
      return identity;
    },
  };
}

/**
 * The synchronizer-token check (OWASP CSRF Prevention Cheat Sheet): the session's token, read by
 * the page from GET /auth/session, must come back in X-CSRF-Token, exactly once. Another site can
 * make the browser send the cookie, but not read the token, nor set a custom header on a
 * cross-origin request without a CORS preflight this service never answers.
 */
export function checkCsrf(request: FastifyRequest, expected: string): void {
  const sent = request.headers[CSRF_HEADER];
  if (typeof sent !== 'string' || headerCount(request.raw.rawHeaders, CSRF_HEADER) !== 1) {
    throw new HttpError(
      'csrf_rejected',
      "a request made with the session cookie must send the session's CSRF token in X-CSRF-Token (GET /auth/session gives it)",
    );
  }
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  if (a.length !== b.length || !timingSafeEqual(a, b))
    throw new HttpError('csrf_rejected', "the X-CSRF-Token is not this session's");
}
