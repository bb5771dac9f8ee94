// Policy test files (`*.test.yaml`): cases of tool, args, claims, env and run view with the wanted
// decision, and properties (`never:`) over generated requests (never.ts), all run through decide()
// exactly as the service runs a request (schema refusal first).
import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { JsonObject, JsonValue } from '../json/value.js';
import { createStrictAjv } from './ajv.js';
import { compileCondition, ConditionError, type CompiledCondition } from './condition/compile.js';
import { amountAt, ZERO } from './amount.js';
import { decide } from './decide.js';
import { PolicyLoadError, type LoadProblem } from './errors.js';
import { compileGlob, GlobError, type Glob } from './glob.js';
import { buildPolicySet, isPolicyTestFileName, readPolicyFiles, type FileBytes } from './load.js';
import { settleCharges, wouldCross, type Refusal } from './limits.js';
import type { Amount, Decision, DecideRequest, DecisionResult, Identity, PolicySet, RunView } from './model.js';
import {
  type CallerSpec,
  checkTarget,
  type NeverProperty,
  type PropertyTarget,
  selectTargets,
  type TargetCheck,
} from './never.js';
import { argsSchema, hasDotSegment, runViewSchema, toDecideRequest, toolNameSchema } from './request.js';
import type { KeyPath, Location } from './source/common.js';
import { keyPathOf, readSource } from './source/read.js';

const DECISIONS = ['allow', 'deny', 'abort', 'require_approval'] as const;
const KINDS = ['read_only', 'local_mutation', 'remote_mutation', 'destructive'] as const;
export const MAX_PROPERTY_RUNS = 10_000;
export const DEFAULT_PROPERTY_RUNS = 100;

// The verified token's claims: sub, team, agent and roles name the caller (the service's default
// claim names); every claim is readable as `$caller.claims.NAME`.
const claimsSchema = {
  type: 'object',
  properties: {
    sub: { type: 'string', minLength: 1 },
    team: { type: 'string' },
    agent: { type: 'string' },
    roles: { type: 'array', items: { type: 'string' } },
  },
} as const;

const list = <T extends object>(items: T) => ({ type: 'array', minItems: 1, items }) as const;

// The keys of a `never:` entry that take a list, or one value for a list of one (normalised before
// the schema check, so the check and its messages are those of the list).
const LIST_KEYS = ['tools', 'kinds', 'tags', 'teams', 'users', 'agents', 'roles', 'env', 'decision'] as const;

const neverSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['decision'],
  properties: {
    name: { type: 'string', minLength: 1 },
    tools: list({ type: 'string', minLength: 1 }),
    kinds: list({ enum: KINDS }),
    tags: list({ type: 'string', minLength: 1 }),
    teams: list({ type: ['string', 'null'] }),
    users: list({ type: 'string', minLength: 1 }),
    agents: list({ type: ['string', 'null'] }),
    roles: list({ type: 'string' }),
    claims: claimsSchema,
    env: list({ type: 'string', minLength: 1 }),
    run: runViewSchema,
    context: { type: 'object' },
    when: { type: 'string', minLength: 1 },
    decision: list({ enum: DECISIONS }),
    runs: { type: 'integer', minimum: 1, maximum: MAX_PROPERTY_RUNS },
  },
} as const;

const caseFileSchema = {
  type: 'object',
  additionalProperties: false,
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
          claims: claimsSchema,
          env: { type: 'string', minLength: 1 },
          run: runViewSchema,
          context: { type: 'object' },
          // The approval the call cites, as the server would find it granted for this very call
          // (`$approval`, docs/spec.md section 3.2); absent: none cited.
          approval: {
            type: 'object',
            additionalProperties: false,
            required: ['kind'],
            properties: {
              kind: { type: 'string', minLength: 1, maxLength: 64 },
              decided_by: { type: 'string', minLength: 1 },
              decided_at: { type: 'string', minLength: 1 },
            },
          },
          // Where the counters of the budgets and rate limits that select the call stand, by id: a
          // budget's amount counted (or spend reported), a rate limit's calls in the window. Absent: 0.
          counters: { type: 'object', additionalProperties: { type: 'number', minimum: 0 } },
          want: { enum: DECISIONS },
          rule: { type: 'string' },
          kind: { type: 'string' },
          reason: { type: 'string' },
        },
      },
    },
    never: { type: 'array', minItems: 1, items: neverSchema },
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
  /** The cited approval as `$approval` reads it (granted, for this very call). */
  approval?: { kind: string; decided_by?: string; decided_at?: string };
  /** The counters' standings by budget or rate limit id (exact). */
  counters?: ReadonlyMap<string, Amount>;
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

/** Where a property is checked: an environment it names (placed where it names it), or the file's or the caller's. */
interface PropertyEnv {
  env: string | null;
  /** Set when the property names it: its position, for a property that selects nothing there. */
  at?: Location & { key: string };
}

/** A property as read from its file: the environments it is checked in are settled by runPolicyTests. */
export interface PropertyCase {
  property: NeverProperty;
  /** Null: the file's `env`, else the caller's. */
  envs: PropertyEnv[] | null;
  fileEnv: string | null;
}

/** One property, checked in each of its environments over each tool it selects. */
export interface PropertyResult {
  property: NeverProperty;
  /** Generated requests decided, over every environment and tool. */
  runs: number;
  checks: (TargetCheck & { env: string | null })[];
  /** The checks that found a counterexample or could not run; empty when the property holds. */
  failures: (TargetCheck & { env: string | null })[];
  /**
   * Where the property held without being tried: `when` matched no generated request, or a rule that
   * could give a forbidden answer was reached by none. One line each, never an argument value.
   */
  warnings: string[];
}

/** The warnings of a property's checks that held (docs/policies.md "Testing policies"). */
function propertyWarnings(p: NeverProperty, checks: readonly (TargetCheck & { env: string | null })[]): string[] {
  const out: string[] = [];
  const forbidden = [...p.decisions].join(' or ');
  for (const c of checks) {
    if (c.counterexample !== undefined || c.problem !== undefined) continue;
    const where = `${c.target}${c.env === null ? '' : ` in ${c.env}`}`;
    if (c.matched === 0) {
      out.push(
        `${where}: \`when\` held for none of the ${c.runs} generated requests: the property checked nothing there`,
      );
      continue;
    }
    const rules = (c.unreached ?? []).map((u) => `"${u.rule}" (${u.policy})`);
    if (rules.length > 0) {
      out.push(
        `${where}: no generated request reached a rule that can answer ${forbidden} (${rules.join(', ')}): no request generated could have broken the property`,
      );
    }
  }
  return out;
}

type Claims = JsonObject & { sub?: string; team?: string; agent?: string; roles?: string[] };

interface NeverDoc {
  name?: string;
  tools?: string[];
  kinds?: string[];
  tags?: string[];
  teams?: (string | null)[];
  users?: string[];
  agents?: (string | null)[];
  roles?: string[];
  claims?: Claims;
  env?: string[];
  run?: RunView;
  context?: JsonObject;
  when?: string;
  decision: Decision[];
  runs?: number;
}

interface CaseDoc {
  env?: string;
  cases?: {
    name: string;
    tool: string;
    args?: JsonObject;
    env?: string;
    run?: RunView;
    context?: JsonObject;
    approval?: { kind: string; decided_by?: string; decided_at?: string };
    counters?: Record<string, number>;
    want: Decision;
    rule?: string;
    kind?: string;
    reason?: string;
    claims?: Claims;
  }[];
  never?: NeverDoc[];
}

function identityOf(claims: Claims | undefined): Identity {
  return {
    user: claims?.sub ?? 'test-user',
    team: claims?.team ?? null,
    agent: claims?.agent ?? null,
    roles: claims?.roles ?? [],
    claims: claims ?? {},
  };
}

export interface CaseFile {
  cases: PolicyCase[];
  properties: PropertyCase[];
  problems: LoadProblem[];
}

export function readCaseFile(path: string, bytes: Uint8Array): CaseFile {
  const read = readSource(path, bytes);
  if (!read.source) return { cases: [], properties: [], problems: read.problems };
  const { value, locate } = read.source;
  const { doc, wrapped } = normaliseLists(value);
  const problemAt = (keyPath: KeyPath, message: string): LoadProblem => ({
    file: path,
    ...locate(keyPath),
    key: keyPath.join('.'),
    message,
  });
  if (!validateCaseFile(doc)) {
    const problems = (validateCaseFile.errors ?? []).map((e) => {
      let keyPath = keyPathOf(doc, e.instancePath);
      // `decision: maybe` was checked as `[maybe]`: place the problem on what is written.
      if (
        keyPath[0] === 'never' &&
        keyPath.length >= 4 &&
        keyPath[3] === 0 &&
        wrapped.has(`${String(keyPath[1])}.${String(keyPath[2])}`)
      ) {
        keyPath = [...keyPath.slice(0, 3), ...keyPath.slice(4)];
      }
      const extra =
        e.keyword === 'additionalProperties'
          ? ` (${String((e.params as { additionalProperty: string }).additionalProperty)})`
          : '';
      return problemAt(keyPath, `${e.message ?? 'invalid'}${extra}`);
    });
    return { cases: [], properties: [], problems };
  }
  const file = doc as unknown as CaseDoc;
  if (file.cases === undefined && file.never === undefined) {
    return { cases: [], properties: [], problems: [problemAt([], 'a test file needs `cases`, `never` or both')] };
  }
  const problems: LoadProblem[] = [];
  const countersOf = (c: { counters?: Record<string, number> }, i: number): ReadonlyMap<string, Amount> | undefined => {
    if (c.counters === undefined) return undefined;
    // The document's own object: its number text is kept (the schema check read the same object).
    const written = (value as { cases: { counters: Record<string, number> }[] }).cases[i]!.counters;
    const out = new Map<string, Amount>();
    for (const [id, n] of Object.entries(c.counters)) {
      const amount = amountAt(written, id, n);
      if (amount === null)
        problems.push(problemAt(['cases', i, 'counters', id], 'a number a double cannot hold exactly'));
      else out.set(id, amount);
    }
    return out;
  };
  const cases = (file.cases ?? []).map(
    (c, i): PolicyCase => ({
      file: path,
      line: locate(['cases', i]).line,
      name: c.name,
      tool: c.tool,
      args: c.args ?? {},
      identity: identityOf(c.claims),
      env: c.env ?? file.env ?? null,
      ...(c.run ? { run: c.run } : {}),
      ...(c.context ? { context: c.context } : {}),
      ...(c.approval ? { approval: c.approval } : {}),
      ...(c.counters ? { counters: countersOf(c, i)! } : {}),
      want: c.want,
      ...(c.rule !== undefined ? { rule: c.rule } : {}),
      ...(c.kind !== undefined ? { kind: c.kind } : {}),
      ...(c.reason !== undefined ? { reason: c.reason } : {}),
    }),
  );
  const properties = (file.never ?? []).map((n, i): PropertyCase => {
    const at = (...rest: KeyPath): KeyPath => ['never', i, ...rest];
    // A list written as one value is located at that value; a list's items at each item.
    const item = (key: string, k: number): KeyPath => (wrapped.has(`${i}.${key}`) ? at(key) : at(key, k));
    const tools: Glob[] = [];
    (n.tools ?? []).forEach((pattern, k) => {
      const glob = globOrProblem(pattern, (message) => problems.push(problemAt(item('tools', k), message)));
      if (glob) tools.push(glob);
    });
    const callerLists = (['users', 'teams', 'agents', 'roles'] as const).filter((key) => n[key] !== undefined);
    if (n.claims !== undefined && callerLists.length > 0) {
      problems.push(
        problemAt(at('claims'), `claims give one caller: they cannot be combined with ${callerLists.join(', ')}`),
      );
    }
    const caller: CallerSpec =
      n.claims !== undefined
        ? { claims: identityOf(n.claims) }
        : {
            ...(n.users ? { users: n.users } : {}),
            ...(n.teams ? { teams: n.teams } : {}),
            ...(n.agents ? { agents: n.agents } : {}),
            ...(n.roles ? { roles: n.roles } : {}),
          };
    const where = locate(at());
    const name = n.name ?? `never.${i}`;
    let when: CompiledCondition | undefined;
    if (n.when !== undefined) {
      try {
        when = compileCondition(n.when);
      } catch (err) {
        if (!(err instanceof ConditionError)) throw err;
        problems.push(problemAt(at('when'), `condition: ${err.message}`));
      }
    }
    const property: NeverProperty = {
      file: path,
      line: where.line,
      column: where.column,
      key: at().join('.'),
      name,
      ...(n.tools ? { tools } : {}),
      ...(n.kinds ? { kinds: new Set(n.kinds) } : {}),
      ...(n.tags ? { tags: new Set(n.tags) } : {}),
      caller,
      ...(n.run ? { run: n.run } : {}),
      ...(n.context ? { context: n.context } : {}),
      ...(when ? { when } : {}),
      decisions: new Set(n.decision),
      runs: n.runs ?? DEFAULT_PROPERTY_RUNS,
      seed: propertySeed(path, name),
    };
    const envs =
      n.env?.map(
        (env, k): PropertyEnv => ({ env, at: { ...locate(item('env', k)), key: item('env', k).join('.') } }),
      ) ?? null;
    return { property, envs, fileEnv: file.env ?? null };
  });
  if (problems.length > 0) return { cases: [], properties: [], problems };
  return { cases, properties, problems: [] };
}

/**
 * The `never:` entries with each list key written as one value wrapped in a list of one, and which
 * ones were (`"<index>.<key>"`). The rest of the document is the same objects.
 */
function normaliseLists(value: JsonValue): { doc: JsonValue; wrapped: Set<string> } {
  const wrapped = new Set<string>();
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !Array.isArray(value.never))
    return { doc: value, wrapped };
  const never = value.never.map((entry, i) => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return entry;
    const copy: JsonObject = { ...entry };
    for (const key of LIST_KEYS) {
      if (!Object.hasOwn(copy, key) || Array.isArray(copy[key])) continue;
      copy[key] = [copy[key] as JsonValue];
      wrapped.add(`${i}.${key}`);
    }
    return copy;
  });
  return { doc: { ...value, never }, wrapped };
}

function globOrProblem(pattern: string, problem: (message: string) => void): Glob | null {
  // As a rule's `tools` (compile.ts): no request names such a tool, so the selector could select nothing.
  if (hasDotSegment(pattern)) {
    problem('a tool name or glob cannot have a "." or ".." path segment: requests naming one are refused');
    return null;
  }
  try {
    return compileGlob(pattern);
  } catch (err) {
    if (!(err instanceof GlobError)) throw err;
    problem(`glob does not compile: ${err.message}`);
    return null;
  }
}

/**
 * A property's seed: FNV-1a of the test file's name and the property's name, to 31 bits. The same
 * property draws the same requests on every run and every machine, whatever directory it is run from.
 */
export function propertySeed(path: string, name: string): number {
  let h = 0x811c9dc5;
  for (const ch of `${basename(path)}\n${name}`) {
    h ^= ch.codePointAt(0)!;
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % 0x80000000;
}

/** The request a case decides: its call, and its cited approval as `$approval` reads it. */
export function caseRequest(c: PolicyCase): DecideRequest {
  const call = toDecideRequest(c);
  if (c.approval === undefined) return call;
  const cited = {
    kind: c.approval.kind,
    status: 'granted' as const,
    decided_by: c.approval.decided_by ?? 'operator',
    decided_at: c.approval.decided_at ?? '1970-01-01T00:00:00.000Z',
    hash: '', // never read by a condition, and a case consumes nothing
  };
  return { ...call, cited };
}

export function runCase(set: PolicySet, c: PolicyCase): CaseResult {
  const request = caseRequest(c);
  let got = decide(set, request, c.identity);
  // Budgets and rate limits: the call against the counters the case gives (absent: empty), as the
  // service settles it after counting (src/policy/limits.ts).
  if (got.charges) {
    const refusals: Refusal[] = [];
    for (const charge of got.charges) {
      const counted = c.counters?.get(charge.limit.id) ?? ZERO;
      if (!wouldCross(charge, counted)) continue;
      const standing =
        charge.key === null || charge.amount === null ? null : { counted, windowStart: '', windowEnd: '' };
      refusals.push({ charge, standing });
    }
    got = settleCharges(got, request, refusals);
  }
  const failures: string[] = [];
  if (got.decision !== c.want) failures.push(`decision: want ${c.want}, got ${got.decision}`);
  if (c.rule !== undefined && got.rule !== c.rule) failures.push(`rule: want ${c.rule}, got ${got.rule}`);
  if (c.kind !== undefined && got.approval?.kind !== c.kind)
    failures.push(`kind: want ${c.kind}, got ${got.approval?.kind ?? '(none)'}`);
  if (c.reason !== undefined && !got.reason.includes(c.reason))
    failures.push(`reason: want it to contain ${JSON.stringify(c.reason)}`);
  return { case: c, got, failures };
}

export interface PolicyTestOptions {
  /** The environment of cases (and case files) that name none. */
  env?: string | null;
  /** Every property's seed (to replay one a failure printed); else each its own. */
  seed?: number;
}

export interface PolicyTestRun {
  results: CaseResult[];
  properties: PropertyResult[];
  problems: LoadProblem[];
}

/**
 * Run every `*.test.yaml` in `dir` against the policies of `dir`, loaded once per environment the
 * cases and properties name. Bad test files or policies come back as problems (the CLI exits 2 on
 * those), and so does a property that selects no tool in an environment: it would check nothing.
 */
export async function runPolicyTests(dir: string, opts: PolicyTestOptions = {}): Promise<PolicyTestRun> {
  const defaultEnv = opts.env ?? null;
  const failed = (problems: LoadProblem[]): PolicyTestRun => ({ results: [], properties: [], problems });
  let names: string[];
  try {
    names = (await readdir(dir)).filter(isPolicyTestFileName).sort();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return failed([{ file: dir, line: 1, column: 1, key: '', message: `cannot read this directory (${code})` }]);
  }
  if (names.length === 0)
    return failed([{ file: dir, line: 1, column: 1, key: '', message: 'no *.test.yaml files here' }]);
  const problems: LoadProblem[] = [];
  const cases: PolicyCase[] = [];
  const propertyCases: PropertyCase[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const read = readCaseFile(path, await readFile(path));
    problems.push(...read.problems);
    cases.push(...read.cases);
    propertyCases.push(...read.properties);
  }
  if (problems.length > 0) return failed(problems);
  let files: FileBytes[];
  try {
    files = await readPolicyFiles(dir);
  } catch (err) {
    if (err instanceof PolicyLoadError) return failed([...err.problems]);
    throw err;
  }
  const sets = new Map<string | null, PolicySet>();
  const setFor = (env: string | null): PolicySet => {
    let set = sets.get(env);
    if (!set) sets.set(env, (set = buildPolicySet(files, { env })));
    return set;
  };
  try {
    // Every property's tools are selected before anything runs: one that selects none is a load problem.
    const planned: {
      property: NeverProperty;
      checks: { env: string | null; set: PolicySet; targets: PropertyTarget[] }[];
    }[] = [];
    for (const pc of propertyCases) {
      const property = opts.seed === undefined ? pc.property : { ...pc.property, seed: opts.seed };
      const envs = pc.envs ?? [{ env: pc.fileEnv ?? defaultEnv }];
      const checks = envs.map(({ env, at }) => {
        const set = setFor(env);
        const targets = selectTargets(set, property);
        if (targets.length === 0) {
          const place = at ?? { line: property.line, column: property.column, key: property.key };
          const where = at ? ' in this environment' : '';
          problems.push({
            file: property.file,
            ...place,
            message: `selects no tool of the policies' catalogues${where}: a property that checks nothing is a mistake`,
          });
        }
        return { env, set, targets };
      });
      planned.push({ property, checks });
    }
    for (const c of cases) setFor(c.env ?? defaultEnv);
    if (problems.length > 0) return failed(problems);
    const results = cases.map((c) => runCase(setFor(c.env ?? defaultEnv), c));
    const properties = planned.map(({ property, checks }): PropertyResult => {
      const done = checks.flatMap(({ env, set, targets }) =>
        targets.map((t) => ({ ...checkTarget(set, property, t), env })),
      );
      return {
        property,
        runs: done.reduce((n, c) => n + c.runs, 0),
        checks: done,
        failures: done.filter((c) => c.counterexample !== undefined || c.problem !== undefined),
        warnings: propertyWarnings(property, done),
      };
    });
    return { results, properties, problems: [] };
  } catch (err) {
    if (err instanceof PolicyLoadError) return failed([...err.problems]);
    throw err;
  }
}
