// `gatehouse hash FILE.json|-`: the canonical form and SHA-256 of a JSON document, or with
// `--approval` the approval hash of {tool, args, kind, capability, presentation} (SPEC section 4).
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { approvalHash, canonicalize, sha256 } from '../json/canonical.js';
import { JsonParseError, parseJson } from '../json/parse.js';
import { isJsonObject, type JsonObject } from '../json/value.js';
import { EXIT, type Io } from './io.js';

export async function runHash(argv: string[], io: Io, stdin: () => Promise<Uint8Array> = readStdin): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { approval: { type: 'boolean' } } });
  const target = positionals[0];
  if (target === undefined || positionals.length > 1) {
    io.err('usage: gatehouse hash FILE.json|- [--approval]\n');
    return EXIT.invalid;
  }
  let value;
  try {
    value = parseJson(target === '-' ? await stdin() : await readFile(target));
  } catch (err) {
    if (err instanceof JsonParseError) {
      io.err(`${target}: ${err.message}\n`);
      return EXIT.invalid;
    }
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      io.err(`${target}: no such file\n`);
      return EXIT.invalid;
    }
    throw err;
  }
  if (!values.approval) {
    const text = canonicalize(value);
    io.out(`${text}\n${sha256(text)}\n`);
    return EXIT.ok;
  }
  const problem = approvalInputProblem(value);
  if (problem) {
    io.err(`${target}: ${problem}\n`);
    return EXIT.invalid;
  }
  const o = value as JsonObject & { tool: string; kind: string; args: JsonObject };
  const input = {
    tool: o.tool,
    args: o.args,
    kind: o.kind,
    capability: (o.capability as JsonObject | undefined) ?? {},
    presentation: (o.presentation as JsonObject | undefined) ?? {},
  };
  io.out(`${canonicalize(input)}\n${approvalHash(input)}\n`);
  return EXIT.ok;
}

function approvalInputProblem(v: unknown): string | null {
  if (!isJsonObject(v)) return 'want an object {tool, args, kind, capability, presentation}';
  for (const key of Object.keys(v)) {
    if (!['tool', 'args', 'kind', 'capability', 'presentation'].includes(key)) return `unknown key "${key}"`;
  }
  if (typeof v.tool !== 'string') return '"tool" must be a string';
  if (typeof v.kind !== 'string') return '"kind" must be a string';
  if (!isJsonObject(v.args)) return '"args" must be an object';
  for (const key of ['capability', 'presentation'] as const) {
    if (v[key] !== undefined && !isJsonObject(v[key])) return `"${key}" must be an object`;
  }
  return null;
}

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
