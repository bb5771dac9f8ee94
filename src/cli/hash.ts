// `gatehouse hash FILE.json|-` (docs/spec.md section 6): the canonical form and the approval hash of a request.
//
// - A request as `/decide` takes it, `{tool, args, run}`: decided against the policies (`--policies
//   DIR`, default ./policies, `--env`, and the caller `--user --team --agent --role`) exactly as the
//   service decides it; a `require_approval` answer prints the canonical form of its approval hash
//   input and the hash, which is the `approval.hash` the service answers. Any other answer has no
//   approval hash: exit 1, saying what it was.
// - An approval hash input `{tool, args, kind, capability, presentation}` (it has `kind`), or
//   `{tool, args, requirements: [{kind, capability, presentation}, …]}` when several policy files ask:
//   hashed as it is, without policies (a missing capability or presentation is {}).
// - `--document`: the canonical form and SHA-256 of any JSON document (the test vectors' `sha256`).
import { readFile } from 'node:fs/promises';
import { approvalHashText, canonicalize, sha256, type ApprovalShapeInput } from '../json/canonical.js';
import { JsonParseError, parseJson } from '../json/parse.js';
import { isJsonObject, type JsonObject, type JsonValue } from '../json/value.js';
import { createStrictAjv } from '../policy/ajv.js';
import { decide } from '../policy/decide.js';
import { toDecideRequest, toolCallSchema, type ToolCall } from '../policy/request.js';
import { defineCommand, parseCommand } from './args.js';
import { CALLER_OPTIONS, callerIdentity, loadPoliciesOrReport, noteDefaultedEnv, servedEnvOf } from './caller.js';
import { EXIT, type Io } from './io.js';

export const HASH = defineCommand({
  name: 'hash',
  usage: `usage: gatehouse hash FILE.json|- [--policies DIR] [--env E] [--user U] [--team T] [--agent A] [--role R]...
       gatehouse hash --document FILE.json|-

Prints a canonical JSON text and its hash, one per line (- reads standard input):
  a request {tool, args, run}, as POST /decide takes it: decided against the policies for the caller
      given, as the service decides it; a require_approval answer prints its approval hash input and
      approval.hash. Any other answer has no approval hash (exit 1, saying what it was).
  an approval hash input {tool, args, kind, capability, presentation}, or {tool, args, requirements}
      when several policy files ask: hashed as it is, without policies.
  --document: the canonical form and SHA-256 of any JSON document.

options:
  --policies DIR   the policies to decide with (default: ./policies)
  --env E          the environment to load (default: POLICY_ENV, else dev unless NODE_ENV=production)
  --user U         the caller's user (default: cli-user)
  --team T         the caller's team
  --agent A        the caller's agent
  --role R         a role of the caller; repeat for several
  --document       hash any JSON document
  -h, --help       show this help

exit status: 0 printed; 1 the request is not decided require_approval; 2 unreadable or invalid input, or a problem in the policies or the arguments
`,
  options: {
    ...CALLER_OPTIONS,
    document: { type: 'boolean' },
    policies: { type: 'string' },
    role: { type: 'string', multiple: true },
  },
  positionals: { min: 1, max: 1, name: 'FILE.json (or - for standard input)' },
});

const validateRequest = createStrictAjv(false).compile(toolCallSchema);

export async function runHash(argv: string[], io: Io, stdin: () => Promise<Uint8Array> = readStdin): Promise<number> {
  const parsed = parseCommand(argv, HASH, io);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const target = positionals[0]!; // exactly one (HASH.positionals)
  const read = await readJson(target, io, stdin);
  if (read === undefined) return EXIT.invalid;
  const { value, bytes } = read;

  if (values.document) {
    // A number's lexeme is kept by its container; a document that is only a number is its own text.
    const text = typeof value === 'number' ? Buffer.from(bytes).toString('utf8').trim() : canonicalize(value);
    io.out(`${text}\n${sha256(text)}\n`);
    return EXIT.ok;
  }
  if (!isJsonObject(value)) {
    io.err(
      `${target}: want a request {tool, args, run} or an approval hash input {tool, args, kind, capability, presentation} or {tool, args, requirements} (--document hashes any JSON)\n`,
    );
    return EXIT.invalid;
  }
  if (Object.hasOwn(value, 'kind') || Object.hasOwn(value, 'requirements')) return printHashInput(value, target, io);

  if (!validateRequest(value)) {
    const e = validateRequest.errors?.[0];
    io.err(`${target}: not a request as /decide takes it: ${e?.instancePath || '/'} ${e?.message ?? 'is invalid'}\n`);
    return EXIT.invalid;
  }
  const served = servedEnvOf(values);
  const set = await loadPoliciesOrReport(values.policies ?? 'policies', served.env, io);
  if (set === null) return EXIT.invalid;
  noteDefaultedEnv(set, served, io);
  const request = toDecideRequest(value as unknown as ToolCall);
  const result = decide(set, request, callerIdentity(values));
  if (result.decision !== 'require_approval' || result.approval === undefined) {
    io.err(
      `${target}: decided ${result.decision} by ${result.rule} (${result.reason}): only a require_approval answer has an approval hash\n`,
    );
    return EXIT.failed;
  }
  const { requirements, hash } = result.approval;
  io.out(
    `${approvalHashText({ tool: request.tool, args: request.args, context: request.context, requirements })}\n${hash}\n`,
  );
  return EXIT.ok;
}

function printHashInput(v: JsonObject, target: string, io: Io): number {
  const problem = hashInputProblem(v);
  if (problem) {
    io.err(`${target}: ${problem}\n`);
    return EXIT.invalid;
  }
  const shape = (o: JsonObject): ApprovalShapeInput => ({
    kind: o.kind as string,
    capability: (o.capability as JsonObject | undefined) ?? {},
    presentation: (o.presentation as JsonObject | undefined) ?? {},
    ...(o.approvers !== undefined ? { approvers: o.approvers as ApprovalShapeInput['approvers'] } : {}),
    ...(o.quorum !== undefined ? { quorum: o.quorum as number } : {}),
    ...(o.separate_from_requester !== undefined
      ? { separate_from_requester: o.separate_from_requester as string }
      : {}),
  });
  const requirements = Array.isArray(v.requirements) ? (v.requirements as JsonObject[]).map(shape) : [shape(v)];
  const text = approvalHashText({ tool: v.tool as string, args: v.args as JsonObject, requirements });
  io.out(`${text}\n${sha256(text)}\n`);
  return EXIT.ok;
}

function hashInputProblem(v: JsonObject): string | null {
  const several = Object.hasOwn(v, 'requirements');
  for (const key of Object.keys(v)) {
    if (!(several ? ['tool', 'args', 'requirements'] : ['tool', 'args', ...SHAPE_KEYS]).includes(key)) {
      return `unknown key "${key}" in an approval hash input`;
    }
  }
  if (typeof v.tool !== 'string') return '"tool" must be a string';
  if (!isJsonObject(v.args)) return '"args" must be an object';
  if (!several) return shapeProblem(v, '');
  if (!Array.isArray(v.requirements) || v.requirements.length === 0) return '"requirements" must be a non-empty array';
  for (const [i, r] of v.requirements.entries()) {
    if (!isJsonObject(r)) return `"requirements.${i}" must be an object`;
    for (const key of Object.keys(r)) if (!SHAPE_KEYS.includes(key)) return `unknown key "requirements.${i}.${key}"`;
    const problem = shapeProblem(r, `requirements.${i}.`);
    if (problem !== null) return problem;
  }
  return null;
}

// A requirement's members the hash covers (docs/spec.md section 4.3); who may answer only when narrowed.
const SHAPE_KEYS: readonly string[] = [
  'kind',
  'capability',
  'presentation',
  'approvers',
  'quorum',
  'separate_from_requester',
];

function shapeProblem(v: JsonObject, at: string): string | null {
  if (typeof v.kind !== 'string') return `"${at}kind" must be a string`;
  for (const key of ['capability', 'presentation', 'approvers'] as const) {
    if (v[key] !== undefined && !isJsonObject(v[key])) return `"${at}${key}" must be an object`;
  }
  if (v.quorum !== undefined && typeof v.quorum !== 'number') return `"${at}quorum" must be a number`;
  if (v.separate_from_requester !== undefined && typeof v.separate_from_requester !== 'string')
    return `"${at}separate_from_requester" must be a string`;
  return null;
}

/** The strictly parsed document and its bytes, or undefined after reporting why not. */
async function readJson(
  target: string,
  io: Io,
  stdin: () => Promise<Uint8Array>,
): Promise<{ value: JsonValue; bytes: Uint8Array } | undefined> {
  try {
    const bytes = target === '-' ? await stdin() : await readFile(target);
    return { value: parseJson(bytes), bytes };
  } catch (err) {
    if (err instanceof JsonParseError) {
      io.err(`${target}: ${err.message}\n`);
      return undefined;
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      io.err(`${target}: no such file\n`);
      return undefined;
    }
    // A directory, a file it may not read: invalid input like a missing one (exit 2), not a crash.
    if (typeof code === 'string') {
      io.err(`${target}: cannot read it (${code})\n`);
      return undefined;
    }
    throw err;
  }
}

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
