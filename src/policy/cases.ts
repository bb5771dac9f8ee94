// Policy test files (`*.test.yaml`): cases of tool, args, claims, env and run view with the wanted
// decision, run through decide() exactly as the service runs a request (schema refusal first).
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JsonObject } from '../json/value.js';
import { createStrictAjv } from './ajv.js';
import { decide } from './decide.js';
import { PolicyLoadError, type LoadProblem } from './errors.js';
import { buildPolicySet, isPolicyTestFileName, readPolicyFiles, type FileBytes } from './load.js';
import type { Decision, DecisionResult, Identity, PolicySet, RunView } from './model.js';
import { argsSchema, runViewSchema, toDecideRequest, toolNameSchema } from './request.js';
import { keyPathOf, readSource } from './source/read.js';

const caseFileSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['cases'],
  properties: {
    env: { type: 'string', minLength: 1 },
    cases: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'tool', 'want'],
        properties: {
          name: { type: 'string', minLength: 1 },
          tool: toolNameSchema,
          args: argsSchema,
          // The verified token's claims: sub, team, agent and roles name the caller (the service's
          // default claim names); every claim is readable as `$caller.claims.NAME`.
          claims: {
            type: 'object',
            properties: {
              sub: { type: 'string', minLength: 1 },
              team: { type: 'string' },
              agent: { type: 'string' },
              roles: { type: 'array', items: { type: 'string' } },
            },
          },
          env: { type: 'string', minLength: 1 },
          run: runViewSchema,
          context: { type: 'object' },
          want: { enum: ['allow', 'deny', 'abort', 'require_approval'] },
          rule: { type: 'string' },
          kind: { type: 'string' },
          reason: { type: 'string' },
        },
      },
    },
  },
} as const;
const validateCaseFile = createStrictAjv(true).compile(caseFileSchema);

export interface PolicyCase {
  file: string;
  line: number;
  name: string;
  tool: string;
  args: JsonObject;
  identity: Identity;
  env: string | null;
  run?: RunView;
  context?: JsonObject;
  want: Decision;
  rule?: string;
  kind?: string;
  reason?: string;
}

export interface CaseResult {
  case: PolicyCase;
  got: DecisionResult;
  /** Empty when the case passed; else what disagreed. */
  failures: string[];
}

interface CaseDoc {
  env?: string;
  cases: {
    name: string;
    tool: string;
    args?: JsonObject;
    env?: string;
    run?: RunView;
    context?: JsonObject;
    want: Decision;
    rule?: string;
    kind?: string;
    reason?: string;
    claims?: JsonObject & { sub?: string; team?: string; agent?: string; roles?: string[] };
  }[];
}

export function readCaseFile(path: string, bytes: Uint8Array): { cases: PolicyCase[]; problems: LoadProblem[] } {
  const read = readSource(path, bytes);
  if (!read.source) return { cases: [], problems: read.problems };
  const { value, locate } = read.source;
  if (!validateCaseFile(value)) {
    const problems = (validateCaseFile.errors ?? []).map((e) => {
      const keyPath = keyPathOf(value, e.instancePath);
      const key = keyPath.join('.');
      const extra = e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty: string }).additionalProperty)})` : '';
      return { file: path, ...locate(keyPath), key, message: `${e.message ?? 'invalid'}${extra}` };
    });
    return { cases: [], problems };
  }
  const doc = value as unknown as CaseDoc;
  const cases = doc.cases.map(
    (c, i): PolicyCase => ({
      file: path,
      line: locate(['cases', i]).line,
      name: c.name,
      tool: c.tool,
      args: c.args ?? {},
      identity: {
        user: c.claims?.sub ?? 'test-user',
        team: c.claims?.team ?? null,
        agent: c.claims?.agent ?? null,
        roles: c.claims?.roles ?? [],
        claims: c.claims ?? {},
      },
      env: c.env ?? doc.env ?? null,
      ...(c.run ? { run: c.run } : {}),
      ...(c.context ? { context: c.context } : {}),
      want: c.want,
      ...(c.rule !== undefined ? { rule: c.rule } : {}),
      ...(c.kind !== undefined ? { kind: c.kind } : {}),
      ...(c.reason !== undefined ? { reason: c.reason } : {}),
    }),
  );
  return { cases, problems: [] };
}

export function runCase(set: PolicySet, c: PolicyCase): CaseResult {
  const got = decide(set, toDecideRequest(c), c.identity);
  const failures: string[] = [];
  if (got.decision !== c.want) failures.push(`decision: want ${c.want}, got ${got.decision}`);
  if (c.rule !== undefined && got.rule !== c.rule) failures.push(`rule: want ${c.rule}, got ${got.rule}`);
  if (c.kind !== undefined && got.approval?.kind !== c.kind) failures.push(`kind: want ${c.kind}, got ${got.approval?.kind ?? '(none)'}`);
  if (c.reason !== undefined && !got.reason.includes(c.reason)) failures.push(`reason: want it to contain ${JSON.stringify(c.reason)}`);
  return { case: c, got, failures };
}

/**
 * Run every `*.test.yaml` in `dir` against the policies of `dir`, loaded once per environment the
 * cases name. Bad test files or policies come back as problems (the CLI exits 2 on those).
 */
export async function runPolicyTests(dir: string, defaultEnv: string | null = null): Promise<{ results: CaseResult[]; problems: LoadProblem[] }> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter(isPolicyTestFileName).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return { results: [], problems: [{ file: dir, line: 1, column: 1, key: '', message: `cannot read this directory (${code})` }] };
  }
  if (names.length === 0) return { results: [], problems: [{ file: dir, line: 1, column: 1, key: '', message: 'no *.test.yaml files here' }] };
  const problems: LoadProblem[] = [];
  const cases: PolicyCase[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const read = readCaseFile(path, await readFile(path));
    problems.push(...read.problems);
    cases.push(...read.cases);
  }
  if (problems.length > 0) return { results: [], problems };
  let files: FileBytes[];
  try {
    files = await readPolicyFiles(dir);
  } catch (err) {
    if (err instanceof PolicyLoadError) return { results: [], problems: [...err.problems] };
    throw err;
  }
  const sets = new Map<string | null, PolicySet>();
  const results: CaseResult[] = [];
  for (const c of cases) {
    const env = c.env ?? defaultEnv;
    let set = sets.get(env);
    if (!set) {
      try {
        set = buildPolicySet(files, { env });
      } catch (err) {
        if (err instanceof PolicyLoadError) return { results: [], problems: [...err.problems] };
        throw err;
      }
      sets.set(env, set);
    }
    results.push(runCase(set, c));
  }
  return { results, problems: [] };
}
