// The development JWT secret: generated once and kept under DATA_DIR, so that the tokens `serve`
// prints and the ones `gatehouse token` mints survive restarts and verify against each other. Only
// used when no key is configured, which loadConfig allows outside production only.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Where the development secret is kept under a data directory. */
export function developmentSecretFile(dataDir: string): string {
  return join(dataDir, 'dev-jwt-secret');
}

/**
 * The secret kept under `dataDir`, created (mode 0600) when there is none, or when the file holds
 * less than 32 bytes of base64url (43 characters), which JWT_SECRET's own minimum would refuse.
 * Rejects when the directory cannot hold it.
 */
export async function developmentSecret(dataDir: string): Promise<string> {
  const file = developmentSecretFile(dataDir);
  const existing = await readFile(file, 'utf8').catch(() => null);
  if (existing !== null && existing.trim().length >= 43) return existing.trim();
  const secret = randomBytes(32).toString('base64url');
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}
