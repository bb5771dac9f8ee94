// One policy file's parsed value → a compiled PolicyFile: the file schema first, then every
// semantic check of docs/spec.md section 2 (globs, conditions, environments, identities, schemas).
// Problems are collected, never thrown, so the operator sees all of them at once.
import { basename } from 'node:path';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { createStrictAjv } from './ajv.js';
import { canonicalize, CanonicalError, sha256 } from '../json/canonical.js';
import { compareDecimals, decimalAt, decimalOf } from '../json/decimal.js';
import type { JsonObject, JsonValue } from '../json/value.js';
import { compileCondition, ConditionError, type CompiledCondition } from './condition/compile.js';
import type { LoadProblem } from './errors.js';
import { isStringListPath, SELECTOR_KEYS, withListsSpelledOut } from './file-lists.js';
import { policyFileSchema } from './file-schema.js';
import { moneyFields, type MoneyField } from './money.js';
import { compileGlob, GlobError, type Glob } from './glob.js';
import { builtinGuard, GUARD_NAMES, patternGuard, type GuardName } from './guards.js';
import { compilePatterns, type PatternDoc } from './guards/pattern.js';
import { amountAt } from './amount.js';
import { DURATION_FORMAT, parseDuration } from './duration.js';
import {
  CALENDAR_UNITS,
  type ApprovalShape,
  type Eligibility,
  type ArgPath,
  type Budget,
  type BudgetWindow,
  type CatalogueEntry,
  type DefaultMode,
  type Guard,
  type GuardAction,
  type GuardStage,
  MODEL_STAGES,
  type LimitScope,
  type OnExceed,
  type PolicyFile,
  type RateLimit,
  type Rule,
  type RuleEffect,
  type Separation,
  type Selectors,
  type ToolKind,
} from './model.js';
import { parseArgPath } from './path.js';
import { hasDotSegment } from './request.js';
import type { KeyPath, PolicySource } from './source/common.js';
import { keyPathOf } from './source/read.js';

/** Reports problems against a source, locating each key path. */
class Problems {
  readonly list: LoadProblem[] = [];
  constructor(private readonly source: PolicySource) {}
  add(where: KeyPath, message: string, atKey = false): void {
    // A list written as one string (`on: results`) is named as written: `guards.0.on`, not `guards.0.on.0`.
    const path =
      where.at(-1) === 0 && typeof valueAt(this.source.value, where.slice(0, -1)) === 'string'
        ? where.slice(0, -1)
        : where;
    const at = this.source.locate(path, atKey);
    this.list.push({ file: this.source.file, line: at.line, column: at.column, key: path.join('.'), message });
  }
  /** Where a key path is in the file (for warnings about valid files). */
  locate(where: KeyPath): { line: number; column: number } {
    const at = this.source.locate(where, false);
    return { line: at.line, column: at.column };
  }
}

function valueAt(root: JsonValue, path: KeyPath): JsonValue | undefined {
  let node: JsonValue | undefined = root;
  for (const seg of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = Array.isArray(node)
      ? typeof seg === 'number'
        ? node[seg]
        : undefined
      : Object.hasOwn(node, seg)
        ? node[seg]
        : undefined;
  }
  return node;
}

const validateFile = createStrictAjv(true).compile(policyFileSchema);

/** Compile one parsed file for the active environment; `ajv` compiles its tool schemas. */
export function compilePolicyFile(
  source: PolicySource,
  env: string | null,
  ajv: Ajv2020,
): { file?: PolicyFile; problems: LoadProblem[] } {
  const problems = new Problems(source);
  const doc = withListsSpelledOut(source.value);
  if (!validateFile(doc)) {
    reportSchemaErrors(problems, doc, validateFile.errors ?? []);
    return { problems: problems.list };
  }
  const d = doc as PolicyDoc;
  // Without `policy`, the file's name without its extension is its identity (docs/spec.md section 2.2).
  const policy = d.policy ?? fileStem(source.file);
  checkIdentityText(
    problems,
    ['policy'],
    policy,
    d.policy === undefined ? 'the policy name (the file name, as `policy` is not given)' : 'policy',
  );
  if (d.version !== undefined) checkIdentityText(problems, ['version'], d.version, 'version');
  const environments = d.environments ?? [];
  checkEnvironments(problems, environments, env);
  const defaultMode = resolveDefault(problems, d, environments, env);
  const scope = d.scope === undefined ? undefined : compileSelectors(problems, ['scope'], environments, d.scope);
  const catalogue = d.tools ?? {};
  const tools = Object.keys(catalogue).map((pattern, order) =>
    compileTool(problems, ajv, policy, pattern, order, catalogue[pattern]!),
  );
  const ruleIds = new Set<string>();
  const rules = (d.rules ?? []).map((r, i) => compileRule(problems, policy, environments, r, i, ruleIds));
  const guards = (d.guards ?? []).map((g, i) => compileGuard(problems, policy, environments, g, i, d.scope));
  // Budgets and rate limits share the rules' ids: a decision's `rule` names one of them.
  const budgets = (d.budgets ?? []).map((b, i) => compileBudget(problems, source, policy, environments, b, i, ruleIds));
  const rateLimits = (d.rate_limits ?? []).map((r, i) =>
    compileRateLimit(problems, policy, environments, r, i, ruleIds),
  );

  let digest = '';
  try {
    // The content as written (a list written as one string stays a string). Numbers in their
    // shortest form (a JSON round trip drops the recorded lexemes): TOML keeps no number text, and one
    // policy has one digest in YAML, JSON or TOML (docs/spec.md section 2.8).
    digest = sha256(canonicalize(JSON.parse(JSON.stringify(source.value)) as JsonValue));
  } catch (err) {
    if (!(err instanceof CanonicalError)) throw err;
    problems.add([], 'content cannot be canonicalized (a string holds a lone surrogate)');
  }
  if (problems.list.length > 0) return { problems: problems.list };
  const file: PolicyFile = {
    path: source.file,
    identity: d.version === undefined ? { policy, digest } : { policy, version: d.version, digest },
    ...(scope ? { scope } : {}),
    environments,
    defaultMode,
    rules: rules.filter((r): r is Rule => r !== null),
    guards: guards.filter((g): g is Guard => g !== null),
    tools: tools.filter((t): t is CatalogueEntry => t !== null),
    budgets: budgets.filter((b): b is Budget => b !== null),
    rateLimits: rateLimits.filter((r): r is RateLimit => r !== null),
    ...(d.limits?.max_calls !== undefined ? { maxCalls: d.limits.max_calls } : {}),
  };
  return { file, problems: [] };
}

// The validated document, as the file schema guarantees it.
interface SelectorDoc {
  tools?: string[];
  kinds?: string[];
  tags?: string[];
  envs?: string[];
  teams?: string[];
  users?: string[];
  agents?: string[];
}
interface RuleDoc extends SelectorDoc {
  id?: string;
  when?: string;
  allow?: boolean;
  abort?: boolean;
  confirm?: boolean | string;
  reason?: string;
  approval?: ApprovalDoc;
}
interface ApprovalDoc {
  kind?: string;
  capability?: string[];
  presentation?: string[];
  approvers?: { roles?: string[]; teams?: string[]; users?: string[] };
  quorum?: number;
  separate_from_requester?: Separation;
}
interface GuardDoc extends SelectorDoc {
  id?: string;
  guard: string;
  on?: GuardStage[];
  action?: GuardAction;
  patterns?: PatternDoc[];
}
interface BudgetDoc extends SelectorDoc {
  id?: string;
  sum?: string;
  max?: number;
  max_usd?: number;
  per: string | number;
  scope: LimitScope;
  on_exceed?: OnExceed;
}
interface RateLimitDoc extends SelectorDoc {
  id?: string;
  calls: number;
  per: string | number;
  scope: LimitScope;
  on_exceed?: OnExceed;
}
interface ToolDoc {
  kind: ToolKind;
  tags?: string[];
  confirm?: boolean;
  approval?: ApprovalDoc;
  description?: string;
  schema?: JsonObject | boolean;
  result_schema?: JsonObject | boolean;
}
interface PolicyDoc {
  policy?: string;
  version?: string;
  scope?: SelectorDoc;
  environments?: string[];
  default?: DefaultMode | Record<string, DefaultMode>;
  tools?: Record<string, ToolDoc>;
  rules?: RuleDoc[];
  guards?: GuardDoc[];
  budgets?: BudgetDoc[];
  rate_limits?: RateLimitDoc[];
  limits?: { max_calls?: number };
}

/** `payments.yaml` → `payments`: the name of a file without its extension (policy files always have one). */
function fileStem(file: string): string {
  const name = basename(file);
  const dot = name.lastIndexOf('.');
  return dot === -1 ? name : name.slice(0, dot);
}

function checkIdentityText(problems: Problems, path: KeyPath, text: string, what: string): void {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes < 1 || bytes > 256) problems.add(path, `${what} must be 1 to 256 bytes`);
  if (!text.isWellFormed()) problems.add(path, `${what} must be valid UTF-8`);
  if (/\p{Cc}/u.test(text)) problems.add(path, `${what} must not contain control characters`);
}

function checkEnvironments(problems: Problems, environments: readonly string[], env: string | null): void {
  if (new Set(environments).size !== environments.length)
    problems.add(['environments'], 'environments are listed twice');
  if (environments.length === 0) return;
  const declared = environments.join(', ');
  if (env === null)
    problems.add(
      ['environments'],
      `this file declares environments (${declared}): set POLICY_ENV (CLI: --env) to one of them`,
    );
  else if (!environments.includes(env))
    problems.add(['environments'], `POLICY_ENV "${env}" is not among the declared environments (${declared})`);
}

function resolveDefault(
  problems: Problems,
  d: PolicyDoc,
  environments: readonly string[],
  env: string | null,
): DefaultMode {
  const def = d.default;
  if (def === undefined) return 'side_effects';
  if (typeof def === 'string') return def;
  if (environments.length === 0) {
    problems.add(['default'], 'a per-environment default needs `environments`');
    return 'deny';
  }
  for (const name of Object.keys(def)) {
    if (!environments.includes(name))
      problems.add(['default', name], 'this environment is not declared in environments', true);
  }
  for (const name of environments) {
    if (!Object.hasOwn(def, name)) problems.add(['default'], `no default for environment "${name}"`);
  }
  return (env !== null && Object.hasOwn(def, env) ? def[env] : undefined) ?? 'deny';
}

function compileTool(
  problems: Problems,
  ajv: Ajv2020,
  policy: string,
  pattern: string,
  order: number,
  doc: ToolDoc,
): CatalogueEntry | null {
  const path = ['tools', pattern];
  const glob = globOrProblem(problems, path, pattern, true);
  if (doc.confirm === false)
    problems.add([...path, 'confirm'], '`confirm: false` is refused: a policy can only add confirmation');
  let validate: ValidateFunction | undefined;
  let moneyOfEntry: MoneyField[] | undefined;
  if (doc.schema !== undefined) {
    for (const at of inexactNumbers(doc.schema)) {
      problems.add(
        [...path, 'schema', ...at],
        'a number a double cannot hold exactly: the schema check compares doubles, so it would not mean what is written',
      );
    }
    try {
      validate = ajv.compile(doc.schema);
    } catch (err) {
      problems.add([...path, 'schema'], `schema does not compile: ${(err as Error).message}`);
    }
    // After ajv has checked the annotations' values: one problem per mistake.
    if (validate !== undefined) {
      const money = moneyFields(doc.schema);
      for (const p of money.problems) problems.add([...path, 'schema', ...p.at], p.message);
      if (money.fields.length > 0) moneyOfEntry = money.fields;
    }
  }
  // The result schema names the keys a result guard's reason may show; it must compile like `schema`.
  if (doc.result_schema !== undefined) {
    try {
      ajv.compile(doc.result_schema);
    } catch (err) {
      problems.add([...path, 'result_schema'], `schema does not compile: ${(err as Error).message}`);
    }
  }
  if (doc.approval !== undefined && doc.confirm !== true)
    problems.add([...path, 'approval'], '`approval` goes with `confirm: true`: only a tool that asks has an approval');
  const approval = doc.approval === undefined ? {} : compileApproval(problems, [...path, 'approval'], doc.approval);
  if (!glob) return null;
  return {
    pattern,
    order,
    glob,
    kind: doc.kind,
    tags: new Set(doc.tags ?? []),
    confirm: doc.confirm === true,
    ...approval,
    policy,
    ...(validate ? { validate, schema: doc.schema!, schemaNames: declaredNames(doc.schema) } : {}),
    ...(doc.result_schema !== undefined ? { resultNames: declaredNames(doc.result_schema) } : {}),
    ...(moneyOfEntry !== undefined ? { money: moneyOfEntry } : {}),
  };
}

/** Key paths of the numbers written with more precision than a double keeps (their lexeme's value is not the double's). */
function inexactNumbers(root: unknown): KeyPath[] {
  const found: KeyPath[] = [];
  const walk = (node: unknown, at: KeyPath): void => {
    if (node === null || typeof node !== 'object') return;
    const entries: [string | number, unknown][] = Array.isArray(node)
      ? node.map((v, i) => [i, v])
      : Object.entries(node);
    for (const [key, value] of entries) {
      if (typeof value === 'number') {
        const written = decimalAt(node, key, value);
        const held = decimalOf(String(value));
        if (written === null || held === null || compareDecimals(written, held) !== 0) found.push([...at, key]);
      } else {
        walk(value, [...at, key]);
      }
    }
  };
  walk(root, []);
  return found;
}

/**
 * Every property name the schema declares (`properties` keys, `required` and `dependentRequired`
 * entries, at any depth): operator-written text a schema refusal may name. Any other key in a failing
 * path is the model's, maybe an email or a card number, and is reported as `*` (docs/spec.md section 2).
 */
function declaredNames(schema: unknown): ReadonlySet<string> {
  const names = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      node.forEach(walk);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
        for (const name of Object.keys(value)) names.add(name);
      } else if (key === 'required' && Array.isArray(value)) {
        for (const name of value) if (typeof name === 'string') names.add(name);
      } else if (key === 'dependentRequired' && value !== null && typeof value === 'object') {
        for (const [name, list] of Object.entries(value)) {
          names.add(name);
          if (Array.isArray(list)) for (const n of list) if (typeof n === 'string') names.add(n);
        }
      }
      walk(value);
    }
  };
  walk(schema);
  return names;
}

function compileSelectors(
  problems: Problems,
  base: KeyPath,
  environments: readonly string[],
  doc: SelectorDoc,
): Selectors {
  const sel: { -readonly [K in keyof Selectors]: Selectors[K] } = {};
  for (const key of SELECTOR_KEYS) {
    const list = doc[key];
    if (list === undefined) continue;
    if (key === 'tools') {
      sel.tools = list
        .map((p, i) => globOrProblem(problems, [...base, 'tools', i], p, false))
        .filter((g): g is Glob => g !== null);
      continue;
    }
    if (key === 'envs') {
      list.forEach((e, i) => {
        if (!environments.includes(e))
          problems.add([...base, 'envs', i], 'this environment is not declared in environments');
      });
    }
    sel[key] = new Set(list);
  }
  return sel;
}

function compileRule(
  problems: Problems,
  policy: string,
  environments: readonly string[],
  doc: RuleDoc,
  index: number,
  ids: Set<string>,
): Rule | null {
  const base: KeyPath = ['rules', index];
  if (doc.id !== undefined) checkOwnId(problems, [...base, 'id'], doc.id);
  const id = doc.id ?? `${policy}#${index}`;
  if (ids.has(id)) problems.add([...base, 'id'], 'this rule id is used twice in this file');
  ids.add(id);
  const selectors = compileSelectors(problems, base, environments, doc);

  let effect: RuleEffect | null = null;
  if (doc.abort === false) problems.add([...base, 'abort'], '`abort: false` means nothing: remove it');
  if (doc.abort === true && doc.allow !== undefined)
    problems.add([...base, 'abort'], 'a rule has either `allow` or `abort`, not both');
  else if (doc.abort === true) effect = 'abort';
  else if (doc.allow !== undefined) effect = doc.allow ? 'allow' : 'deny';
  // Confirm-only: it adds an approval to what other rules or the default allow, and allows nothing.
  else if (doc.confirm !== undefined && doc.confirm !== false) effect = 'confirm';
  else if (doc.confirm === undefined)
    problems.add(base, 'a rule needs `allow: true`, `allow: false`, `abort: true` or `confirm`');

  const when = doc.when === undefined ? undefined : conditionOrProblem(problems, [...base, 'when'], doc.when);
  let confirm: true | CompiledCondition | undefined;
  if (doc.confirm !== undefined) {
    if (doc.confirm === false)
      problems.add([...base, 'confirm'], '`confirm: false` is refused: a policy can only add confirmation');
    else if (effect === 'deny' || effect === 'abort')
      problems.add(
        [...base, 'confirm'],
        '`confirm` cannot go with `allow: false` or `abort`: a rule that asks never denies',
      );
    else confirm = doc.confirm === true ? true : conditionOrProblem(problems, [...base, 'confirm'], doc.confirm);
  }
  let approval: { approval?: ApprovalShape; eligibility?: Eligibility } = {};
  if (doc.approval !== undefined) {
    if (effect === 'deny' || effect === 'abort')
      problems.add(
        [...base, 'approval'],
        '`approval` cannot go with `allow: false` or `abort`: only a rule that asks has an approval',
      );
    approval = compileApproval(problems, [...base, 'approval'], doc.approval);
  }
  if (effect === null) return null;
  return {
    id,
    index,
    selectors,
    effect,
    ...(when ? { when, whenAt: problems.locate([...base, 'when']) } : {}),
    ...(confirm ? { confirm } : {}),
    ...approval,
    ...(doc.reason !== undefined ? { reason: doc.reason } : {}),
  };
}

function compileGuard(
  problems: Problems,
  policy: string,
  environments: readonly string[],
  doc: GuardDoc,
  index: number,
  scope: SelectorDoc | undefined,
): Guard | null {
  const base: KeyPath = ['guards', index];
  if (doc.id !== undefined) checkOwnId(problems, [...base, 'id'], doc.id);
  const selectors = compileSelectors(problems, base, environments, doc);
  const on = doc.on ?? ['args'];
  if (new Set(on).size !== on.length) problems.add([...base, 'on'], 'a stage is listed twice');
  const action = doc.action ?? 'deny';
  const model = on.filter((stage) => MODEL_STAGES.has(stage));
  if (model.length > 0) {
    // A model's request or response belongs to no tool: such a guard watches every call of the run
    // (for the callers and environments it selects), never some tools.
    for (const key of ['tools', 'kinds', 'tags'] as const) {
      if (doc[key] !== undefined)
        problems.add(
          [...base, key],
          `a guard on ${model.join(' and ')} reads the model's text, which belongs to no tool: it cannot select ${key} (write a separate guard for args or result)`,
        );
    }
    if (scope !== undefined && (scope.tools !== undefined || scope.kinds !== undefined || scope.tags !== undefined))
      problems.add(
        [...base, 'on'],
        "this file's scope selects tools, kinds or tags: a guard on a model stage in it could never run",
      );
    if (action === 'require_approval')
      problems.add(
        [...base, 'action'],
        `require_approval is for a call or its result: ${model.join(' and ')} cannot wait for a person (use deny or redact)`,
      );
  }
  if (action === 'redact' && on.includes('args'))
    problems.add(
      [...base, 'action'],
      '`redact` cannot go with `on: args`: a call cannot be partly run (use deny or require_approval, or a separate guard on result)',
    );
  if (!(GUARD_NAMES as readonly string[]).includes(doc.guard)) {
    problems.add([...base, 'guard'], `unknown guard (known: ${GUARD_NAMES.join(', ')})`);
    return null;
  }
  let detector: Guard['detector'] | null = null;
  if (doc.guard === 'pattern') {
    if (doc.patterns === undefined) problems.add(base, 'a pattern guard needs `patterns`');
    else {
      const compiled = compilePatterns(doc.patterns);
      if ('problems' in compiled) {
        for (const p of compiled.problems) problems.add([...base, 'patterns', p.index, 'regex'], p.message);
      } else detector = patternGuard(compiled);
    }
  } else if (doc.patterns !== undefined) {
    problems.add([...base, 'patterns'], 'only a `pattern` guard has `patterns`');
  } else detector = builtinGuard(doc.guard as Exclude<GuardName, 'pattern'>);
  if (detector === null) return null;
  return {
    id: doc.id ?? `${policy}#guards.${index}`,
    guard: doc.guard as GuardName,
    selectors,
    action,
    on: new Set(on),
    detector,
  };
}

// Windows longer than a year would keep counters for longer than anyone reads them.
const MAX_WINDOW_SECONDS = 31_622_400;

/**
 * `per` as a whole number of seconds (`60`, `"90s"`, `"15m"`, `"2h"`, `"7d"`: the one duration grammar,
 * src/policy/duration.ts), or what is wrong with it. Counters count whole seconds, so `"1500ms"` is refused.
 */
function windowSeconds(per: string | number, what: string): number | { problem: string } {
  const ms = parseDuration(per);
  if (ms === null) return { problem: `must be a duration: ${DURATION_FORMAT}` };
  if (ms % 1000 !== 0) return { problem: `${what} is a whole number of seconds` };
  if (ms / 1000 > MAX_WINDOW_SECONDS) return { problem: `${what} is at most a year (366 days)` };
  return ms / 1000;
}

function checkLimitId(problems: Problems, path: KeyPath, id: string, ids: Set<string>): void {
  if (ids.has(id))
    problems.add(path, 'this id is used twice in this file (rules, budgets and rate limits share one set of ids)');
  ids.add(id);
}

function compileBudget(
  problems: Problems,
  source: PolicySource,
  policy: string,
  environments: readonly string[],
  doc: BudgetDoc,
  index: number,
  ids: Set<string>,
): Budget | null {
  const base: KeyPath = ['budgets', index];
  if (doc.id !== undefined) checkOwnId(problems, [...base, 'id'], doc.id);
  const id = doc.id ?? `${policy}#budgets.${index}`;
  checkLimitId(problems, [...base, 'id'], id, ids);
  const selectors = compileSelectors(problems, base, environments, doc);
  let ok = true;
  const refuse = (path: KeyPath, message: string): void => {
    problems.add(path, message);
    ok = false;
  };
  if (doc.max !== undefined && doc.max_usd !== undefined)
    refuse([...base, 'max_usd'], 'a budget has `max` or `max_usd`, not both');
  if (doc.max === undefined && doc.max_usd === undefined)
    refuse(base, 'a budget needs `max` (with `sum`, or counting calls) or `max_usd` (spend reported to POST /usage)');
  if (doc.sum !== undefined && doc.max === undefined && doc.max_usd !== undefined) {
    refuse([...base, 'sum'], '`sum` goes with `max`: a `max_usd` budget counts the spend reported to POST /usage');
  }
  let sum: ArgPath | undefined;
  if (doc.sum !== undefined) {
    const parsed = parseArgPath(doc.sum);
    if ('error' in parsed) refuse([...base, 'sum'], parsed.error);
    else sum = { text: doc.sum, segments: parsed.segments };
  }
  // The maximum as written (the file schema checked a copy, which keeps no number text).
  const key = doc.max_usd !== undefined ? 'max_usd' : 'max';
  const written = valueAt(source.value, base);
  const maxValue = doc[key];
  const max =
    maxValue === undefined || written === undefined || written === null || typeof written !== 'object'
      ? null
      : amountAt(written, key, maxValue);
  if (maxValue !== undefined && max === null) {
    refuse(
      [...base, key],
      'a number a double cannot hold exactly: counters compare exact decimals, so it would not mean what is written',
    );
  }
  let per: BudgetWindow | null = null;
  if (typeof doc.per === 'string' && CALENDAR_UNITS.has(doc.per)) {
    per = { calendar: doc.per as Extract<BudgetWindow, { calendar: unknown }>['calendar'], text: doc.per };
  } else {
    const seconds = windowSeconds(doc.per, 'a window');
    if (typeof seconds !== 'number') refuse([...base, 'per'], seconds.problem);
    else per = { seconds, text: String(doc.per) };
  }
  if (!ok || max === null || per === null) return null;
  return {
    type: 'budget',
    id,
    index,
    policy,
    selectors,
    measure: doc.max_usd !== undefined ? { usd: true } : sum !== undefined ? { sum } : { calls: true },
    max,
    per,
    scope: doc.scope,
    // Fail closed: a budget without `on_exceed` refuses what would cross it.
    onExceed: doc.on_exceed ?? 'deny',
  };
}

function compileRateLimit(
  problems: Problems,
  policy: string,
  environments: readonly string[],
  doc: RateLimitDoc,
  index: number,
  ids: Set<string>,
): RateLimit | null {
  const base: KeyPath = ['rate_limits', index];
  if (doc.id !== undefined) checkOwnId(problems, [...base, 'id'], doc.id);
  const id = doc.id ?? `${policy}#rate_limits.${index}`;
  checkLimitId(problems, [...base, 'id'], id, ids);
  const selectors = compileSelectors(problems, base, environments, doc);
  const seconds = windowSeconds(doc.per, 'a rate limit window');
  if (typeof seconds !== 'number') {
    problems.add([...base, 'per'], seconds.problem);
    return null;
  }
  return {
    type: 'rate_limit',
    id,
    index,
    policy,
    selectors,
    calls: doc.calls,
    perSeconds: seconds,
    perText: doc.per,
    scope: doc.scope,
    onExceed: doc.on_exceed ?? 'deny',
  };
}

// Ids Gatehouse writes itself: `<policy>#<index>`, `<policy>#default`, `<policy>#tools.<name>`,
// `builtin#default`, `internal` (an evaluation error). A rule or guard written with one would pass
// its answers off as another file's default or as an internal error.
function checkOwnId(problems: Problems, path: KeyPath, id: string): void {
  if (id.includes('#') || id === 'internal')
    problems.add(path, 'an id cannot contain "#" or be "internal": Gatehouse writes those ids itself');
}

function globOrProblem(problems: Problems, path: KeyPath, pattern: string, atKey: boolean): Glob | null {
  // No request may name such a tool (request.ts): the entry or selector could never apply, and
  // reads as if `..` meant something.
  if (hasDotSegment(pattern)) {
    problems.add(
      path,
      'a tool name or glob cannot have a "." or ".." path segment: requests naming one are refused',
      atKey,
    );
    return null;
  }
  try {
    return compileGlob(pattern);
  } catch (err) {
    if (!(err instanceof GlobError)) throw err;
    problems.add(path, `glob does not compile: ${err.message}`, atKey);
    return null;
  }
}

function conditionOrProblem(problems: Problems, path: KeyPath, source: string): CompiledCondition | undefined {
  try {
    return compileCondition(source);
  } catch (err) {
    if (!(err instanceof ConditionError)) throw err;
    problems.add(path, `condition: ${err.message}`);
    return undefined;
  }
}

/**
 * An `approval` block (a rule's, or a catalogue entry's with `confirm`): its shape, unless it gives
 * eligibility alone (that keeps the default shape, so adding who may answer never changes what the
 * operator is shown), and its eligibility with what does not
 * narrow left out (docs/spec.md section 4.3: a requirement hashes as before unless it narrows).
 */
function compileApproval(
  problems: Problems,
  path: KeyPath,
  doc: ApprovalDoc,
): { approval?: ApprovalShape; eligibility?: Eligibility } {
  // A block of eligibility alone keeps the default shape; any other block (an empty one included, as
  // before eligibility existed) is a shape.
  const eligibilityOnly =
    doc.kind === undefined &&
    doc.capability === undefined &&
    doc.presentation === undefined &&
    (doc.approvers !== undefined || doc.quorum !== undefined || doc.separate_from_requester !== undefined);
  const shaped = !eligibilityOnly;
  const shape: ApprovalShape = {
    ...(doc.kind !== undefined ? { kind: doc.kind } : {}),
    ...(doc.capability ? { capability: argPaths(problems, [...path, 'capability'], doc.capability) } : {}),
    ...(doc.presentation ? { presentation: argPaths(problems, [...path, 'presentation'], doc.presentation) } : {}),
  };
  const lists: { roles?: string[]; teams?: string[]; users?: string[] } = {};
  for (const key of ['roles', 'teams', 'users'] as const) {
    const list = doc.approvers?.[key];
    if (list !== undefined) lists[key] = [...new Set(list)].sort();
  }
  const eligibility: Eligibility = {
    ...(Object.keys(lists).length > 0 ? { approvers: lists } : {}),
    ...(doc.quorum !== undefined && doc.quorum !== 1 ? { quorum: doc.quorum } : {}),
    ...(doc.separate_from_requester === 'team' ? { separate_from_requester: 'team' as const } : {}),
  };
  return {
    ...(shaped ? { approval: shape } : {}),
    ...(Object.keys(eligibility).length > 0 ? { eligibility } : {}),
  };
}

function argPaths(problems: Problems, path: KeyPath, texts: readonly string[]): ArgPath[] {
  const out: ArgPath[] = [];
  texts.forEach((text, i) => {
    const parsed = parseArgPath(text);
    if ('error' in parsed) problems.add([...path, i], parsed.error);
    else out.push({ text, segments: parsed.segments });
  });
  return out;
}

/** Turn ajv's errors on the file schema into located, value-free problems. */
function reportSchemaErrors(problems: Problems, doc: unknown, errors: readonly ErrorObject[]): void {
  // An anyOf failure comes with one error per branch; report the anyOf alone.
  const anyOf = errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath);
  for (const e of errors) {
    if (e.keyword !== 'anyOf' && anyOf.some((p) => e.instancePath === p || e.instancePath.startsWith(`${p}/`)))
      continue;
    const path = keyPathOf(doc, e.instancePath);
    switch (e.keyword) {
      case 'additionalProperties': {
        const key = String((e.params as { additionalProperty: string }).additionalProperty);
        // Another runtime's policy files name where their budgets are kept; Gatehouse's are in its database.
        const why =
          key === 'store' && path.length === 2 && path[0] === 'budgets'
            ? ': Gatehouse keeps budget counters in its PostgreSQL; remove `store`'
            : '';
        problems.add([...path, key], `unknown key${why}`, true);
        break;
      }
      case 'required':
        problems.add(
          path,
          `missing required key "${String((e.params as { missingProperty: string }).missingProperty)}"`,
        );
        break;
      case 'anyOf':
        problems.add(
          path,
          path.at(-1) === 'per'
            ? path[0] === 'budgets'
              ? `must be minute, hour, day, week, month, or a duration: ${DURATION_FORMAT}`
              : `must be a duration: ${DURATION_FORMAT}`
            : 'must be allow, deny, side_effects, or a map from environment to one of them',
        );
        break;
      case 'enum':
        problems.add(path, `must be one of: ${((e.params as { allowedValues: unknown[] }).allowedValues).join(', ')}`);
        break;
      case 'minItems':
        problems.add(
          path,
          (e.params as { limit: number }).limit === 1 ? 'must not be empty' : `${e.message ?? 'too few items'}`,
        );
        break;
      case 'minProperties':
        problems.add(
          path,
          path.length === 0
            ? 'the file is empty: a policy file has at least one key'
            : path[0] === 'scope'
              ? 'a scope needs at least one selector'
              : (e.message ?? 'too few keys'),
        );
        break;
      case 'type':
        problems.add(
          path,
          isStringListPath(path) ? 'must be a string or a list of strings' : (e.message ?? 'wrong type'),
        );
        break;
      case 'propertyNames':
        problems.add(path, `has an invalid key: ${e.message ?? ''}`);
        break;
      default:
        problems.add(path, e.message ?? `fails ${e.keyword}`);
    }
  }
}
