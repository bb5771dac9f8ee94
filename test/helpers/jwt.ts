// Forged tokens built from raw JSON text, so a test controls every byte a verifier reads.
import { constants as cryptoConstants, createHmac, createSign, sign as cryptoSign, type KeyObject } from 'node:crypto';

export const b64url = (data: string | Buffer): string => Buffer.from(data).toString('base64url');
export const nowSec = (): number => Math.floor(Date.now() / 1000);

/** A full claim set for the test helpers' defaults (sub agent-1, team support), valid for an hour. */
export function claimSet(extra: Record<string, unknown> = {}): Record<string, unknown> {
  const now = nowSec();
  return { sub: 'agent-1', team: 'support', agent: 'bot', roles: [], iat: now, exp: now + 3600, ...extra };
}

/** The signature of `input` for `alg` with `key` (HMAC secret as string/Buffer, or a private key). */
export function jwsSignature(alg: string, input: string, key: string | Buffer | KeyObject): Buffer {
  if (alg.toLowerCase() === 'none') return Buffer.alloc(0);
  const bits = alg.slice(2);
  if (alg.startsWith('HS'))
    return createHmac(`sha${bits}`, key as string | Buffer)
      .update(input)
      .digest();
  if (alg.startsWith('RS'))
    return createSign(`sha${bits}`)
      .update(input)
      .sign(key as KeyObject);
  if (alg.startsWith('PS')) {
    return createSign(`sha${bits}`)
      .update(input)
      .sign({ key: key as KeyObject, padding: cryptoConstants.RSA_PKCS1_PSS_PADDING, saltLength: Number(bits) / 8 });
  }
  if (alg.startsWith('ES'))
    return createSign(`sha${bits}`)
      .update(input)
      .sign({ key: key as KeyObject, dsaEncoding: 'ieee-p1363' });
  if (alg === 'EdDSA') return cryptoSign(null, Buffer.from(input), key as KeyObject);
  throw new Error(`unsupported alg ${alg}`);
}

/**
 * A compact JWS from raw header and payload TEXT (so a test can write duplicate names, BOMs, odd
 * numbers), signed for `alg` with `key`. `signature` overrides the computed one.
 */
export function signRawJwt(
  headerText: string | Buffer,
  payloadText: string | Buffer,
  alg: string,
  key: string | Buffer | KeyObject,
  signature?: Buffer,
): string {
  const input = `${b64url(headerText)}.${b64url(payloadText)}`;
  return `${input}.${b64url(signature ?? jwsSignature(alg, input, key))}`;
}

/** A compact JWS of these objects: header is `{alg, typ: 'JWT', ...header}`. */
export function forgeJwt(
  payload: Record<string, unknown>,
  alg: string,
  key: string | Buffer | KeyObject,
  header: Record<string, unknown> = {},
): string {
  return signRawJwt(JSON.stringify({ alg, typ: 'JWT', ...header }), JSON.stringify(payload), alg, key);
}
