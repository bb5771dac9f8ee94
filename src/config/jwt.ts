// The token settings (docs/configuration.md): one key source (a shared secret, a public key or a
// provider's key set), and in production the audience and issuer a provider's tokens must name.
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { Reader } from './read.js';

export type JwtAlgorithm = 'HS256' | 'RS256' | 'ES256' | 'EdDSA';

/**
 * JWT_MAX_LIFETIME's default, in seconds: 24 h, the lifetime of the development tokens `serve`
 * prints. A bound on `exp - now` stops an `exp` of 1e20, or one written in milliseconds by mistake,
 * from making a token (and its cached identity) valid practically forever.
 */
export const DEFAULT_JWT_MAX_LIFETIME_SEC = 86_400;

export interface JwtSettings {
  readonly secret: string | null;
  readonly publicKey: string | null;
  /** The algorithm of secret / publicKey; null with a JWKS (each key pins its own) or no key. */
  readonly algorithm: JwtAlgorithm | null;
  /** JWT_JWKS_URL: the identity provider's key set, fetched and refreshed (src/http/jwks.ts). */
  readonly jwksUrl: string | null;
  /** JWT_JWKS_REFRESH: how often the key set is fetched again, in ms. */
  readonly jwksRefreshMs: number;
  /** JWT_ALLOW_UNBOUND: production accepts an asymmetric key or JWKS without JWT_AUDIENCE / JWT_ISSUER. */
  readonly allowUnbound: boolean;
  readonly issuer: string | null;
  readonly audience: string | null;
  readonly clockToleranceSec: number;
  /** Longest lifetime accepted: a token whose `exp` is further ahead than this (plus the tolerance) is 401. */
  readonly maxLifetimeSec: number;
}

export function jwtSettings(read: Reader, production: boolean): JwtSettings {
  const { str, duration, seconds, bool, problems } = read;
  const secret = str('JWT_SECRET');
  // Trimmed once, here: env files and secret stores often add a newline or indentation that the
  // PEM decoder refuses. The key validated below is the key the server then uses.
  const publicKey = str('JWT_PUBLIC_KEY')?.trim() ?? null;
  const jwksUrl = str('JWT_JWKS_URL')?.trim() ?? null;
  const issuer = str('JWT_ISSUER');
  const audience = str('JWT_AUDIENCE');
  const allowUnbound = bool('JWT_ALLOW_UNBOUND');
  let algorithm: JwtAlgorithm | null = null;
  if (secret !== null && publicKey !== null) problems.push('set JWT_SECRET or JWT_PUBLIC_KEY, not both');
  if (jwksUrl !== null && (secret !== null || publicKey !== null)) {
    problems.push(`set JWT_JWKS_URL or ${secret !== null ? 'JWT_SECRET' : 'JWT_PUBLIC_KEY'}, not both`);
  }
  if (jwksUrl !== null) {
    const problem = jwksUrlProblem(jwksUrl, production);
    if (problem !== null) problems.push(problem);
  } else if (secret !== null) {
    // RFC 8725 section 3.5: an HMAC key must carry enough entropy to resist brute force.
    if (Buffer.byteLength(secret) < 32) problems.push('JWT_SECRET must be at least 32 bytes');
    algorithm = 'HS256';
  } else if (publicKey !== null) {
    algorithm = algorithmOf(publicKey);
    if (algorithm === null)
      problems.push('JWT_PUBLIC_KEY must be a PEM public key: RSA (RS256), EC P-256 (ES256) or Ed25519 (EdDSA)');
  } else if (production) {
    problems.push('NODE_ENV=production needs JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL');
  }
  // A provider's public key verifies every token it mints, for every application it serves: without
  // an audience (and issuer) to match, a token minted for another application, roles included, is
  // accepted here (RFC 7519 section 4.1.3, RFC 8725 section 3.9). A shared HS256 secret is this
  // service's own.
  if (production && (publicKey !== null || jwksUrl !== null) && !allowUnbound) {
    const missing = [...(audience === null ? ['JWT_AUDIENCE'] : []), ...(issuer === null ? ['JWT_ISSUER'] : [])];
    if (missing.length > 0) {
      problems.push(
        `NODE_ENV=production with ${jwksUrl !== null ? 'JWT_JWKS_URL' : 'JWT_PUBLIC_KEY'} needs ${missing.join(' and ')}, ` +
          'so that tokens the provider mints for other applications are refused (or set JWT_ALLOW_UNBOUND=true to accept them)',
      );
    }
  }
  return {
    secret,
    publicKey,
    algorithm,
    jwksUrl,
    jwksRefreshMs: duration('JWT_JWKS_REFRESH', '10m', { min: '10s', max: '24h' }),
    allowUnbound,
    issuer,
    audience,
    clockToleranceSec: seconds('JWT_CLOCK_TOLERANCE', '30s', { min: '1s', max: '300s' }, { allowZero: true }),
    maxLifetimeSec: seconds('JWT_MAX_LIFETIME', `${DEFAULT_JWT_MAX_LIFETIME_SEC}s`, { min: '60s', max: '365d' }),
  };
}

/**
 * Why JWT_JWKS_URL cannot be used, or null. In production the key set must come over https (a
 * network attacker who can answer it would mint any identity); plain http is allowed there only to
 * a loopback address (a local sidecar or proxy), and anywhere outside production.
 */
function jwksUrlProblem(text: string, production: boolean): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'JWT_JWKS_URL must be an absolute https:// URL';
  }
  if (url.username !== '' || url.password !== '') return 'JWT_JWKS_URL must not carry credentials';
  if (url.protocol === 'https:') return null;
  if (url.protocol !== 'http:') return 'JWT_JWKS_URL must be an https:// URL';
  if (production && !isLoopbackHost(url.hostname)) {
    return 'NODE_ENV=production needs an https:// JWT_JWKS_URL (plain http only to a loopback address)';
  }
  return null;
}

/** localhost, [::1] or 127.0.0.0/8: a sidecar or proxy on this machine. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/**
 * The one algorithm a public key may verify: the key, not the token, picks it (RFC 8725 section 3.1).
 * `pem` is used as given (loadConfig trims it first), so a key accepted here is accepted by the verifier.
 */
export function algorithmOf(pem: string): JwtAlgorithm | null {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    return null;
  }
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  return null;
}
