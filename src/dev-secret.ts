// The development secrets: generated once and kept under DATA_DIR. The JWT secret, so that the tokens
// `serve` prints and the ones `gatehouse token` mints survive restarts and verify against each other;
// the session secret, so that a sign-in in progress survives a restart. Only used when no key is
// configured, which loadConfig allows outside production only.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The development secrets, by what they key: the JWT secret, or SESSION_SECRET's stand-in. */
export type DevelopmentSecretName = 'dev-jwt-secret' | 'dev-session-secret';

/** Where a development secret is kept under a data directory. */
export function developmentSecretFile(dataDir: string, name: DevelopmentSecretName = 'dev-jwt-secret'): string {
  return join(dataDir, name);
}

/**
 * The secret kept under `dataDir`, created (mode 0600) when there is none, or when the file holds
 * less than 32 bytes of base64url (43 characters), which JWT_SECRET's (and SESSION_SECRET's) own minimum would refuse.
 * Rejects when the directory cannot hold it.
 */
export async function developmentSecret(
  dataDir: string,
  name: DevelopmentSecretName = 'dev-jwt-secret',
): Promise<string> {
  const file = developmentSecretFile(dataDir, name);
  const existing = await readFile(file, 'utf8').catch(() => null);
  if (existing !== null && existing.trim().length >= 43) return existing.trim();
  const secret = randomBytes(32).toString('base64url');
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
