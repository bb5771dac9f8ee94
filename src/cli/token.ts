// `gatehouse token --sub U [--team T] [--agent A] [--role R]... [--ttl D]`: a development token, so
// that trying another team, a second approver or a self-approval needs no JWT library. HS256 only:
// signed with JWT_SECRET, or else with the development secret `serve` generates under DATA_DIR, so
// the service started from the same directory with the same environment accepts it. It refuses
// where it cannot sign what the service verifies (JWT_PUBLIC_KEY, JWT_JWKS_URL: the identity
// provider holds the private key) and in production, where tokens come from the identity provider.
import { createHmac } from 'node:crypto';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { parseDuration } from '../policy/duration.js';
import { developmentSecret, developmentSecretFile } from '../dev-secret.js';
import { ClaimError, identityFromClaims } from '../policy/claims.js';
import { defineCommand, parseCommand, usageError } from './args.js';
import { EXIT, type Io } from './io.js';

const DEFAULT_TTL_SEC = 3600;

export const TOKEN = defineCommand({
  name: 'token',
  usage: `usage: gatehouse token --sub U [--team T] [--agent A] [--role R]... [--ttl D]

Mints a development token: a JWT signed (HS256) with JWT_SECRET or, when it is not set, with the
development secret that \`gatehouse serve\` generates and keeps in DATA_DIR/dev-jwt-secret (created
here if there is none yet), so the service started from the same directory and environment accepts
it. The token alone is written to stdout; a summary of it to stderr.

  export BOB=$(gatehouse token --sub bob --team support --role approver)

Its claims: sub; the team, agent and roles claims, under the names TEAM_CLAIM, AGENT_CLAIM and
ROLES_CLAIM give (default team, agent, roles); iat and exp; iss and aud when JWT_ISSUER and
JWT_AUDIENCE are set.

options:
  --sub U       the user (required)
  --team T      the team
  --agent A     the agent
  --role R      a role; repeat for several (--role approver --role admin)
  --ttl D       how long it is valid: 90s, 30m, 1h, 24h, or seconds (3600); default 1h, or JWT_MAX_LIFETIME if shorter;
                longer than JWT_MAX_LIFETIME (default 24h) is refused: the service would refuse the token
  -h, --help    show this help

Refused (exit 2) with NODE_ENV=production, and with JWT_PUBLIC_KEY or JWT_JWKS_URL set: the service
then verifies tokens that the identity provider signs with a private key it alone holds.

exit status: 0 printed; 2 refused, or a problem in the arguments or the configuration
`,
  options: {
    sub: { type: 'string' },
    team: { type: 'string' },
    agent: { type: 'string' },
    role: { type: 'string', multiple: true },
    ttl: { type: 'string' },
  },
  positionals: { min: 0, max: 0 },
});

export async function runToken(
  argv: string[],
  io: Io,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<number> {
  const parsed = parseCommand(argv, TOKEN, io);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  if (values.sub === undefined) return usageError(io, 'token', '--sub is required', TOKEN.usage);

  // loadConfig's own test of production; asked first, so the refusal says why rather than listing
  // what production would need (DATABASE_URL, a key).
  if (env.NODE_ENV === 'production') {
    return refuse(
      io,
      'NODE_ENV=production: development tokens are refused there; tokens come from your identity provider',
    );
  }
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.err(`gatehouse token: ${err.message}\n`);
    return EXIT.invalid;
  }
  if (config.jwt.publicKey !== null || config.jwt.jwksUrl !== null) {
    const which = config.jwt.publicKey !== null ? 'JWT_PUBLIC_KEY' : 'JWT_JWKS_URL';
    return refuse(
      io,
      `${which} is set: the service verifies tokens signed with the identity provider's private key, which gatehouse token cannot sign; it signs HS256 with JWT_SECRET or the development secret only`,
    );
  }

  const maxSec = config.jwt.maxLifetimeSec;
  let ttlSec = Math.min(DEFAULT_TTL_SEC, maxSec);
  if (values.ttl !== undefined) {
    // Whole seconds: a token's `exp` is a number of seconds (RFC 7519 section 2, NumericDate).
    const ms = parseDuration(values.ttl);
    if (ms === null || ms % 1000 !== 0) {
      return usageError(
        io,
        'token',
        '--ttl must be a whole number of seconds, or one with a unit: 90s, 30m, 1h, 24h',
        TOKEN.usage,
      );
    }
    ttlSec = ms / 1000;
    if (ttlSec > maxSec) {
      return refuse(
        io,
        `--ttl ${values.ttl} is longer than JWT_MAX_LIFETIME (${maxSec} s): the service would refuse the token; ask for at most that, or raise JWT_MAX_LIFETIME for the service and here`,
      );
    }
  }

  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = { sub: values.sub };
  if (values.team !== undefined) claims[config.claims.team] = values.team;
  if (values.agent !== undefined) claims[config.claims.agent] = values.agent;
  if (values.role !== undefined) claims[config.claims.roles] = values.role;
  if (config.jwt.issuer !== null) claims.iss = config.jwt.issuer;
  if (config.jwt.audience !== null) claims.aud = config.jwt.audience;
  claims.iat = now;
  claims.exp = now + ttlSec;
  try {
    // The service's own reading of the claims: what it would refuse is refused here, before signing.
    identityFromClaims(claims, config.claims);
  } catch (err) {
    if (!(err instanceof ClaimError)) throw err;
    return refuse(io, `the service would refuse this token: ${err.message}`);
  }

  let secret = config.jwt.secret;
  const signedWith =
    secret !== null ? 'JWT_SECRET' : `the development secret in ${developmentSecretFile(config.dataDir)}`;
  if (secret === null) {
    try {
      secret = await developmentSecret(config.dataDir);
    } catch (err) {
      return refuse(io, `the development secret cannot be kept under ${config.dataDir}: ${(err as Error).message}`);
    }
  }
  io.out(`${signHs256(claims, secret)}\n`);
  io.err(`gatehouse token: ${describe(values.sub, values, ttlSec)}, signed with ${signedWith}\n`);
  return EXIT.ok;
}

/** A compact JWS (RFC 7515 section 7.1) of these claims, HS256. */
function signHs256(claims: Record<string, unknown>, secret: string): string {
  const input = `${base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${base64url(JSON.stringify(claims))}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

function base64url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

function describe(
  sub: string,
  values: { team?: string | undefined; agent?: string | undefined; role?: string[] | undefined },
  ttlSec: number,
): string {
  const parts = [`sub ${sub}`];
  if (values.team !== undefined) parts.push(`team ${values.team}`);
  if (values.agent !== undefined) parts.push(`agent ${values.agent}`);
  parts.push(`roles [${(values.role ?? []).join(', ')}]`);
  return `a token for ${parts.join(', ')}, valid ${formatSeconds(ttlSec)}`;
}

function formatSeconds(sec: number): string {
  if (sec % 3600 === 0) return `${sec / 3600} h`;
  if (sec % 60 === 0) return `${sec / 60} min`;
  return `${sec} s`;
}

function refuse(io: Io, why: string): number {
  io.err(`gatehouse token: refused: ${why}\n`);
  return EXIT.invalid;
}
