// A local JWKS server (node:http on 127.0.0.1, a free port) for the JWKS tests, counting the
// requests it answers, and keys made with jose to publish and sign with.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

export type JwksMode = 'ok' | 'error' | 'garbage' | 'empty';

export interface JwksServer {
  readonly url: string;
  /** Requests answered so far. */
  hits(): number;
  /** The keys published while the mode is `ok`. */
  publish(keys: JWK[]): void;
  /** `error`: 500; `garbage`: 200 with a body that is not JSON; `empty`: 200 `{"keys":[]}`. */
  setMode(mode: JwksMode): void;
  /** Stops listening (connections are refused) until start() listens again on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startJwksServer(keys: JWK[] = []): Promise<JwksServer> {
  let published = keys;
  let mode: JwksMode = 'ok';
  let hits = 0;
  const server: Server = createServer((_req, res) => {
    hits++;
    if (mode === 'error') res.writeHead(500, { 'content-type': 'text/plain' }).end('oops');
    else if (mode === 'garbage')
      res.writeHead(200, { 'content-type': 'application/json' }).end('<html>maintenance</html>');
    else
      res
        .writeHead(200, { 'content-type': 'application/jwk-set+json' })
        .end(JSON.stringify({ keys: mode === 'empty' ? [] : published }));
  });
  const listen = (port: number): Promise<void> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const { port } = server.address() as AddressInfo;
  const stop = (): Promise<void> =>
    new Promise((resolve) => {
      if (!server.listening) return resolve();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    hits: () => hits,
    publish: (k) => void (published = k),
    setMode: (m) => void (mode = m),
    stop,
    start: () => listen(port),
    close: stop,
  };
}

export interface SigningKey {
  readonly kid: string;
  readonly alg: string;
  readonly privateKey: CryptoKey;
  /** The public JWK as published (kid, alg unless `withAlg` is false, use: sig). */
  readonly jwk: JWK;
}

export async function signingKey(
  alg: 'RS256' | 'PS256' | 'ES256' | 'ES384' | 'EdDSA',
  kid: string,
  options: { withAlg?: boolean } = {},
): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, use: 'sig', ...(options.withAlg === false ? {} : { alg }) };
  return { kid, alg, privateKey, jwk };
}

const nowSec = (): number => Math.floor(Date.now() / 1000);

/** A token signed with `key`: kid and alg from the key unless the header says otherwise. */
export async function signWith(
  key: SigningKey,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const now = nowSec();
  const protectedHeader = { alg: key.alg, kid: key.kid, typ: 'JWT', ...header };
  for (const [name, value] of Object.entries(protectedHeader))
    if (value === undefined) delete (protectedHeader as Record<string, unknown>)[name];
  return new SignJWT({ sub: 'agent-1', team: 'support', agent: 'bot', roles: [], iat: now, exp: now + 3600, ...claims })
    .setProtectedHeader(protectedHeader as { alg: string })
    .sign(key.privateKey);
}

/** Poll `check` until it returns true (bounded: a state never reached fails the test). */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
