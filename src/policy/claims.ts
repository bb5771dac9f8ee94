// The identity a token's claims stand for (docs/spec.md section 5.2), checked once for every way a
// token is read: a bearer token (src/http/auth.ts), a sign-in's ID token (src/http/routes/auth.ts)
// and the CLI's `gatehouse token`, which refuses to sign what the service would refuse.
import { isWellFormed } from '../json/unicode.js';
import type { JsonObject } from '../json/value.js';
import type { Identity } from './identity.js';

/** The claims that hold the team, the agent and the roles (CLAIM_TEAM, CLAIM_AGENT, CLAIM_ROLES). */
export interface ClaimNames {
  readonly team: string;
  readonly agent: string;
  readonly roles: string;
}

/** Claims that cannot stand for an identity: the token's fault (401), named without its value. */
export class ClaimError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClaimError';
  }
}

/**
 * Longest sub, team or agent accepted, in UTF-16 code units. At most the approval store's LIMITS.name
 * (512 characters; test/http/auth.test.ts checks it): with the checks below, every identity that
 * authenticates can be stored as a requester or an approver, so the approval routes never fail
 * later on the token's claims.
 */
export const MAX_CLAIM_LENGTH = 256;

/**
 * docs/spec.md section 5: user = sub, team/agent/roles from the configured claims. An absent team or agent
 * is a caller without one (rules naming teams do not match it); a claim of the wrong type is 401,
 * never coerced. Identity strings hold no control characters (U+0000 cannot even be stored), no
 * invisible format characters (bidi, zero-width) and no lone surrogates: such a token is refused
 * here, naming the claim and never its value, instead of failing later as a 500 or as an error that
 * blames the body, or authenticating a name that displays as another.
 */
export function identityFromClaims(payload: unknown, claims: ClaimNames): Identity {
  if (payload === null || typeof payload !== 'object') throw new ClaimError('the token has no claims');
  const p = payload as Record<string, unknown>;
  const sub = p.sub;
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > MAX_CLAIM_LENGTH) {
    throw new ClaimError(`the token needs a string \`sub\` of 1 to ${MAX_CLAIM_LENGTH} characters`);
  }
  checkClaimText('sub', sub);
  const optional = (name: string): string | null => {
    if (!Object.hasOwn(p, name) || p[name] === undefined) return null;
    const v = p[name];
    if (typeof v !== 'string' || v.length === 0 || v.length > MAX_CLAIM_LENGTH) {
      throw new ClaimError(`the claim "${name}" must be a non-empty string of at most ${MAX_CLAIM_LENGTH} characters`);
    }
    checkClaimText(name, v);
    return v;
  };
  const team = optional(claims.team);
  const agent = optional(claims.agent);
  let roles: string[] = [];
  if (Object.hasOwn(p, claims.roles)) {
    const r = p[claims.roles];
    if (!Array.isArray(r) || r.length > 100 || !r.every((x) => typeof x === 'string')) {
      throw new ClaimError(`the claim "${claims.roles}" must be an array of strings`);
    }
    for (const role of r as string[]) checkClaimText(claims.roles, role);
    roles = [...(r as string[])];
  }
  const name = displayName(p);
  return Object.freeze({
    user: sub,
    team,
    agent,
    roles: Object.freeze(roles),
    ...(name === null ? {} : { name }),
    claims: p as JsonObject,
  });
}

/**
 * The claims a display name is read from, in order (OpenID Connect Core 1.0 section 5.1,
 * https://openid.net/specs/openid-connect-core-1_0.html#StandardClaims).
 */
export const NAME_CLAIMS = ['name', 'preferred_username', 'email'] as const;

/**
 * The first of NAME_CLAIMS that is a usable string. A name only labels a person on the page, so one
 * that is not usable (not a string, empty, too long, holding a control or invisible character) is
 * passed over for the next, never a reason to refuse the token: the `sub` still identifies the caller.
 */
export function displayName(claims: Readonly<Record<string, unknown>>): string | null {
  for (const claim of NAME_CLAIMS) {
    if (!Object.hasOwn(claims, claim)) continue;
    const v = claims[claim];
    if (typeof v !== 'string') continue;
    const trimmed = v.trim();
    if (trimmed.length === 0 || trimmed.length > MAX_CLAIM_LENGTH) continue;
    if (CONTROL.test(trimmed) || INVISIBLE.test(trimmed) || !isWellFormed(trimmed)) continue;
    return trimmed;
  }
  return null;
}

// Cc: C0 controls (U+0000–U+001F), DEL and C1 controls (U+007F–U+009F).
const CONTROL = /\p{Cc}/u;
// Cf: the invisible format characters: bidi embeddings, overrides and isolates (U+202A–U+202E,
// U+2066–U+2069), LRM/RLM/ALM, zero-width characters (U+200B–U+200D, U+2060), the BOM, the soft
// hyphen and tag characters. `alice` and `alice\u200b` print alike but are two users, and a bidi
// override makes a name display as another (Trojan Source, CVE-2021-42574; UTS #39). Zl/Zp (U+2028,
// U+2029) break a line in a log viewer like a control character would.
const INVISIBLE = /[\p{Cf}\p{Zl}\p{Zp}]/u;

function checkClaimText(name: string, value: string): void {
  if (CONTROL.test(value)) throw new ClaimError(`the claim "${name}" contains a control character`);
  if (INVISIBLE.test(value))
    throw new ClaimError(`the claim "${name}" contains an invisible format or separator character`);
  if (!isWellFormed(value)) throw new ClaimError(`the claim "${name}" contains a lone surrogate`);
}
