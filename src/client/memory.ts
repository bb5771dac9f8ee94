// The client's memory of the approvals gate() filed: for a call, keyed by run and call, the approval's
// id and the redeem sent for it, so a call asked about twice (a framework that checks "needs
// approval?" and later executes, a retried hook, a restarted process) waits on and redeems the one
// approval instead of filing another. The approvals themselves live in Gatehouse's database; this is
// only the host's note of which one is its call's (docs/client.md, "One approval per call per run").
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ToolCall } from './types.js';

/** Values are opaque strings written by gate(); keep them as given. */
export interface ApprovalMemory {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
}

/** In this process only: the default. */
export function processMemory(): ApprovalMemory {
  const values = new Map<string, string>();
  return {
    get: async (key) => values.get(key),
    set: async (key, value) => void values.set(key, value),
    delete: async (key) => void values.delete(key),
  };
}

/**
 * One small file per call under `directory` (created 0700 when missing), written whole and renamed
 * into place, so several processes (one hook process per tool call) never lose each other's entries
 * and a crash never leaves half an entry. An entry is removed once its approval is spent.
 */
export function fileMemory(directory: string): ApprovalMemory {
  const fileOf = async (key: string): Promise<string> => join(directory, `${(await sha256Hex(key)).slice(0, 40)}.json`);
  return {
    async get(key) {
      let text: string;
      try {
        text = await readFile(await fileOf(key), 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
      let entry: { key?: unknown; value?: unknown } | null;
      try {
        entry = JSON.parse(text) as typeof entry;
      } catch {
        return undefined; // not a file this memory wrote: no entry (the next set() replaces it)
      }
      // The name is a hash of the key: the key inside guards against the (theoretical) collision.
      return entry?.key === key && typeof entry.value === 'string' ? entry.value : undefined;
    },
    async set(key, value) {
      await mkdir(directory, { recursive: true, mode: 0o700 });
      const file = await fileOf(key);
      const temp = `${file}.${crypto.randomUUID()}.tmp`;
      await writeFile(temp, JSON.stringify({ key, value }), { mode: 0o600 });
      await rename(temp, file);
    },
    async delete(key) {
      await unlink(await fileOf(key)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
    },
  };
}

/**
 * The memory's key for a call: its run and a hash of what decides which approval it needs (tool, args,
 * context; the run view changes from step to step and is not part of the approval's hash either).
 */
export async function callKey(runId: string | undefined, call: ToolCall): Promise<string> {
  const what = stableJson({ tool: call.tool, args: call.args ?? {}, context: call.context ?? {} });
  return `${runId ?? ''}\n${await sha256Hex(what)}`;
}

/**
 * Lowercase hex SHA-256 of a text's UTF-8, by the Web Crypto global rather than node:crypto: importing
 * node:crypto costs a short-lived process (a Claude Code hook, one per tool call) more than node:http
 * does, and an allowed call hashes nothing.
 */
async function sha256Hex(text: string): Promise<string> {
  return Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))).toString('hex');
}

/** JSON with object keys sorted, so the same call gives the same key whatever order it was built in. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}
