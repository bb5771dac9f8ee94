// sha256() on a Node without crypto.hash (before 20.12, which package.json's engines still allows):
// the Hash object path must give the same digests as the one-shot path the other tests exercise.
import { afterAll, describe, expect, it, vi } from 'vitest';

vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  return { ...crypto, hash: undefined, default: { ...crypto, hash: undefined } };
});

// The core project shares modules between files (isolate: false in vitest.config.ts): a
// canonical.js another file loaded first holds the real crypto, so it is loaded afresh here, and the
// files after this one get the real crypto back.
vi.resetModules();
const { sha256 } = await import('../../src/json/canonical.js');
afterAll(() => {
  vi.doUnmock('node:crypto');
  vi.resetModules();
});

describe('sha256 without crypto.hash', () => {
  it('hashes the UTF-8 text as the one-shot path does', async () => {
    expect((await import('node:crypto')).hash).toBeUndefined(); // the path under test is the fallback
    expect(sha256('')).toBe('sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256('abc')).toBe('sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256('é😀')).toBe('sha256:1184d1f608158eea09d297565575892231550c403aaa913008d867a97cfd5c76');
  });
});
