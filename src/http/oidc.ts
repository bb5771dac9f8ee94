// The relying party: Gatehouse as an OpenID Connect client of the company's identity provider, with
// openid-client (docs/security.md "Sign-in"). The authorization code flow with PKCE (RFC 7636, S256),
// a state and a nonce; the ID token is validated by openid-client (signature from the provider's
// JWKS, iss, aud, exp, iat, nonce). The provider's metadata is discovered on first use, not at
// start: a provider that is down stops sign-in (503), never /decide or the start of the service.
import * as client from 'openid-client';
import type { Logger } from 'pino';
import type { OidcConfig } from '../config.js';
import { HttpError } from './errors.js';

/** What a sign-in in progress must remember until the provider sends the browser back. */
export interface LoginTransaction {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
}

export interface RelyingParty {
  /** A new sign-in: where to send the browser, and what to keep until it comes back. */
  start(): Promise<{ url: string; transaction: LoginTransaction }>;
  /**
   * The provider's answer at the callback (`callbackUrl`: PUBLIC_URL/auth/callback with the query
   * received), checked against the transaction: the validated ID token's claims, and the token itself.
   */
  finish(
    callbackUrl: URL,
    transaction: LoginTransaction,
  ): Promise<{ claims: Record<string, unknown>; idToken: string }>;
  /** Where to send the browser to end the provider's session too; null when the provider has no end_session_endpoint. */
  endSessionUrl(idToken: string | null): Promise<string | null>;
}

export interface RelyingPartyOptions {
  readonly oidc: OidcConfig;
  /** PUBLIC_URL/auth/callback, registered at the provider. */
  readonly redirectUri: string;
  /** PUBLIC_URL/ui, registered at the provider as a post-logout redirect URI. */
  readonly postLogoutRedirectUri: string;
  readonly log: Logger;
  /** Seconds for each request to the provider. */
  readonly timeoutSec?: number;
}

/** How long a failed discovery is remembered before the next sign-in tries again. */
const RETRY_AFTER_SEC = 5;

export function createRelyingParty(options: RelyingPartyOptions): RelyingParty {
  const { oidc } = options;
  const issuer = new URL(oidc.issuer);
  const timeout = options.timeoutSec ?? 10;
  let configuration: Promise<client.Configuration> | null = null;
  let failedAt = 0;

  const discover = (): Promise<client.Configuration> => {
    if (configuration !== null) return configuration;
    if (Date.now() - failedAt < RETRY_AFTER_SEC * 1000) return Promise.reject(unreachable());
    const pending = (async () => {
      // Plain http only where loadConfig allowed it: outside production, or to a loopback address.
      const execute = issuer.protocol === 'http:' ? [client.allowInsecureRequests] : [];
      const found = await client.discovery(issuer, oidc.clientId, undefined, undefined, { execute, timeout });
      // The client authenticates as OpenID Connect's default (client_secret_basic) unless the provider
      // lists only client_secret_post (OpenID Connect Discovery 1.0, token_endpoint_auth_methods_supported).
      const methods = found.serverMetadata().token_endpoint_auth_methods_supported;
      const basic = methods === undefined || methods.includes('client_secret_basic');
      const auth = basic ? client.ClientSecretBasic(oidc.clientSecret) : client.ClientSecretPost(oidc.clientSecret);
      const configured = new client.Configuration(
        found.serverMetadata(),
        oidc.clientId,
        { client_secret: oidc.clientSecret },
        auth,
      );
      for (const run of execute) run(configured);
      configured.timeout = timeout;
      return configured;
    })();
    configuration = pending;
    pending.catch((err: unknown) => {
      configuration = null;
      failedAt = Date.now();
      options.log.error(
        { err: describe(err), issuer: oidc.issuer },
        'the identity provider (OIDC_ISSUER) could not be discovered: sign-in answers 503 until it can',
      );
    });
    return pending.catch(() => {
      throw unreachable();
    });
  };

  return {
    async start() {
      const config = await discover();
      const transaction = {
        state: client.randomState(),
        nonce: client.randomNonce(),
        verifier: client.randomPKCECodeVerifier(),
      };
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: options.redirectUri,
        response_type: 'code',
        scope: oidc.scopes,
        state: transaction.state,
        nonce: transaction.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(transaction.verifier),
        code_challenge_method: 'S256',
      });
      return { url: url.href, transaction };
    },

    async finish(callbackUrl, transaction) {
      const config = await discover();
      let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
      try {
        tokens = await client.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: transaction.verifier,
          expectedState: transaction.state,
          expectedNonce: transaction.nonce,
          idTokenExpected: true,
        });
      } catch (err) {
        throw callbackError(err, options.log);
      }
      const claims = tokens.claims();
      if (claims === undefined || tokens.id_token === undefined)
        throw new HttpError('signin_failed', 'the identity provider sent no ID token: sign in again');
      return { claims: { ...claims }, idToken: tokens.id_token };
    },

    async endSessionUrl(idToken) {
      let config: client.Configuration;
      try {
        config = await discover();
      } catch {
        return null; // signed out here all the same; the provider's session is the provider's
      }
      if (config.serverMetadata().end_session_endpoint === undefined) return null;
      const parameters: Record<string, string> = {
        client_id: oidc.clientId,
        post_logout_redirect_uri: options.postLogoutRedirectUri,
      };
      if (idToken !== null) parameters.id_token_hint = idToken;
      return client.buildEndSessionUrl(config, parameters).href;
    },
  };
}

function unreachable(): HttpError {
  return new HttpError('unavailable', 'the identity provider (OIDC_ISSUER) cannot be reached; retry', {
    retryAfterSec: RETRY_AFTER_SEC,
  });
}

/** An OAuth error code as RFC 6749 section 4.1.2.1 spells them; anything else is not echoed. */
const OAUTH_ERROR = /^[a-z_]{1,64}$/;

/**
 * What the browser is told when the callback fails. The provider's refusal (`error=access_denied`
 * on the redirect, `invalid_grant` from the token endpoint) is named by its code; a check that did
 * not pass (state, nonce, issuer, signature, PKCE) only by what failed, never with the values. The
 * provider unreachable is 503. Every case is logged.
 */
function callbackError(err: unknown, log: Logger): HttpError {
  log.warn({ err: describe(err) }, 'a sign-in failed at the callback');
  if (err instanceof client.AuthorizationResponseError || err instanceof client.ResponseBodyError) {
    const code = OAUTH_ERROR.test(err.error) ? ` (${err.error})` : '';
    return new HttpError('signin_failed', `the identity provider refused the sign-in${code}: sign in again`);
  }
  if (err instanceof client.ClientError) {
    return new HttpError(
      'signin_failed',
      `the identity provider's answer did not pass the checks (${err.code ?? 'invalid'}): sign in again`,
    );
  }
  // fetch's network failures (TypeError) and timeouts (AbortSignal.timeout: DOMException).
  if (err instanceof TypeError || (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')))
    return unreachable();
  return new HttpError('internal', 'the sign-in failed');
}

/** An error as logged: its kind and message, and the OAuth or library code; never a token. */
function describe(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: String(err) };
  const e = err as Error & { code?: unknown; error?: unknown; cause?: unknown };
  return {
    type: e.name,
    message: e.message,
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    ...(typeof e.error === 'string' ? { error: e.error } : {}),
    ...(e.cause instanceof Error ? { cause: e.cause.message } : {}),
  };
}
