// Sign-in for people (docs/configuration.md): PUBLIC_URL, the OpenID provider (OIDC_ISSUER and its
// companions) and the session.
import { isLoopbackHost } from './jwt.js';
import type { Env } from './read.js';

export interface OidcConfig {
  /** OIDC_ISSUER: the provider's issuer identifier; its metadata is discovered from it. */
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** OIDC_SCOPES: the scopes asked for, space-separated, `openid` among them. */
  readonly scopes: string;
  /** OIDC_ROLES_CLAIM: the ID token claim that holds the roles (default ROLES_CLAIM). */
  readonly rolesClaim: string;
}

/** PUBLIC_URL as links are made from it: an absolute http(s) URL, no credentials, query or fragment, no trailing slash. */
export function publicUrlOf(text: string | null, problems: string[]): string | null {
  if (text === null) return null;
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    problems.push('PUBLIC_URL must be an absolute http:// or https:// URL, like https://gatehouse.example.com');
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    problems.push('PUBLIC_URL must be an http:// or https:// URL');
  else if (url.username !== '' || url.password !== '') problems.push('PUBLIC_URL must not carry credentials');
  else if (url.search !== '' || url.hash !== '') problems.push('PUBLIC_URL must not have a query or a fragment');
  else return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  return null;
}

const OIDC_NAMES = ['OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_SCOPES', 'OIDC_ROLES_CLAIM'] as const;

/**
 * OIDC_ISSUER and its companions, or null when sign-in is off. The provider is reached over https
 * (plain http only outside production or to a loopback address, as JWT_JWKS_URL); in production the
 * page itself must be https too, or the session cookie could not be Secure.
 */
export function oidcConfig(
  env: Env,
  str: (name: string) => string | null,
  context: { production: boolean; publicUrl: string | null; rolesClaim: string },
  problems: string[],
): OidcConfig | null {
  const issuer = str('OIDC_ISSUER')?.trim() ?? null;
  if (issuer === null) {
    for (const name of OIDC_NAMES)
      if (str(name) !== null)
        problems.push(`${name} is set but OIDC_ISSUER is not: set OIDC_ISSUER to turn sign-in on`);
    return null;
  }
  const { production, publicUrl } = context;
  const before = problems.length;
  let url: URL | null = null;
  try {
    url = new URL(issuer);
  } catch {
    problems.push("OIDC_ISSUER must be an absolute https:// URL (the identity provider's issuer identifier)");
  }
  if (url !== null) {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') problems.push('OIDC_ISSUER must be an https:// URL');
    else if (url.username !== '' || url.password !== '') problems.push('OIDC_ISSUER must not carry credentials');
    else if (url.search !== '' || url.hash !== '') problems.push('OIDC_ISSUER must not have a query or a fragment');
    else if (url.protocol === 'http:' && production && !isLoopbackHost(url.hostname)) {
      problems.push('NODE_ENV=production needs an https:// OIDC_ISSUER (plain http only to a loopback address)');
    }
  }
  const clientId = str('OIDC_CLIENT_ID');
  const clientSecret = str('OIDC_CLIENT_SECRET');
  if (clientId === null) problems.push('OIDC_ISSUER needs OIDC_CLIENT_ID');
  if (clientSecret === null) problems.push('OIDC_ISSUER needs OIDC_CLIENT_SECRET');
  if (env.PUBLIC_URL === undefined || env.PUBLIC_URL === '')
    problems.push('OIDC_ISSUER needs PUBLIC_URL (the redirect URI is PUBLIC_URL/auth/callback)');
  else if (
    publicUrl !== null &&
    production &&
    !publicUrl.startsWith('https://') &&
    !isLoopbackHost(new URL(publicUrl).hostname)
  ) {
    problems.push('NODE_ENV=production with OIDC_ISSUER needs an https:// PUBLIC_URL: the session cookie is Secure');
  }
  const scopes = (str('OIDC_SCOPES') ?? 'openid').trim().split(/\s+/);
  if (!scopes.includes('openid')) problems.push('OIDC_SCOPES must include openid');
  if (scopes.some((s) => !/^[\x21\x23-\x5B\x5D-\x7E]+$/.test(s)))
    problems.push('OIDC_SCOPES must be scope names separated by spaces (RFC 6749 section 3.3)');
  if (problems.length > before || clientId === null || clientSecret === null) return null;
  return {
    issuer,
    clientId,
    clientSecret,
    scopes: scopes.join(' '),
    rolesClaim: str('OIDC_ROLES_CLAIM') ?? context.rolesClaim,
  };
}
