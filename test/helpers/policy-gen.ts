// fast-check arbitraries for random but VALID policy sets and random requests over a small universe
// (tools t0..t5 and names matched by globs, three kinds of argument: `a` number, `b` string, `c`
// boolean), so that random pairs often hit the interesting cases: several rules applying at once,
// undecidable conditions, catalogue globs, guards, limits, per-environment defaults, confirm-only
// rules and files with a `scope`.
//
// A generated set is kept as plain policy documents (`GenSet`), so a test can both load it with
// buildPolicySet and evaluate it with an independent reference evaluator.
import fc from 'fast-check';
import type { JsonObject } from '../../src/json/value.js';
import { buildPolicySet } from '../../src/policy/load.js';
import type { DecideRequest, Identity, PolicySet, RunView } from '../../src/policy/model.js';

export type Mode = 'allow' | 'deny' | 'side_effects';
export type Kind = 'read_only' | 'local_mutation' | 'remote_mutation' | 'destructive';

export interface GenSelectors {
  tools?: string[];
  kinds?: string[];
  tags?: string[];
  envs?: string[];
  teams?: string[];
  users?: string[];
  agents?: string[];
}
export interface GenApproval {
  kind?: string;
  capability?: string[];
  presentation?: string[];
}
/** A rule: `allow` or `abort`, or neither (a confirm-only rule, which then has `confirm`). */
export interface GenRule extends GenSelectors {
  id?: string;
  when?: string;
  allow?: boolean;
  abort?: true;
  confirm?: true | string;
  reason?: string;
  approval?: GenApproval;
}
export interface GenGuard extends GenSelectors {
  id?: string;
  guard: 'pii';
  action?: 'deny' | 'require_approval';
}
export interface GenTool {
  kind: Kind;
  tags?: string[];
  confirm?: true;
  schema?: unknown;
}
export interface GenDoc {
  policy: string;
  version?: string;
  scope?: GenSelectors;
  environments?: string[];
  default?: Mode | Record<string, Mode>;
  tools?: Record<string, GenTool>;
  rules?: GenRule[];
  guards?: GenGuard[];
  limits?: { max_calls: number };
}
export interface GenFile {
  name: string;
  doc: GenDoc;
}
export interface GenSet {
  env: 'dev' | 'prod' | null;
  files: GenFile[];
}

// ---------------------------------------------------------------------------------------------------
// The universe

/** Tool names a request can name. */
export const REQUEST_TOOLS = [
  't0',
  't1',
  't2',
  't3',
  't4',
  't5',
  'tx',
  'ax',
  'bx',
  'cx',
  'g_a',
  'g_b',
  'g_c',
  'zz',
] as const;
/** Names and globs a catalogue can define (each at most once across all files). */
export const CATALOGUE_PATTERNS = [
  't0',
  't1',
  't2',
  't3',
  't4',
  't5',
  'ax',
  'bx',
  'g_*',
  't?',
  '[ab]x',
  '*x',
  'g_[ab]',
] as const;
/** Names and globs a rule's or guard's `tools` can list. */
export const RULE_TOOLS = [
  't0',
  't1',
  't2',
  't3',
  'ax',
  'g_a',
  'g_*',
  't?',
  '[ab]x',
  '*',
  '?x',
  't[0-2]',
  '[!t]*',
] as const;
export const KINDS: readonly Kind[] = ['read_only', 'local_mutation', 'remote_mutation', 'destructive'];
export const SELECTOR_KINDS = [...KINDS, 'unknown'] as const;
export const TAGS = ['money', 'mcp', 'ops'] as const;
export const TEAMS = ['team1', 'team2', 'team3'] as const;
export const USERS = ['u1', 'u2', 'u3'] as const;
export const AGENTS = ['bot1', 'bot2'] as const;
export const ENVS = ['dev', 'prod'] as const;
/** Conditions over `a` (number), `b` (string), `c` (boolean) and a few nested paths. */
export const CONDITIONS = [
  'a > 5',
  'a <= 3',
  'a == 1',
  'a in [1, 2]',
  'a != 4',
  'b == "x"',
  "b != 'y'",
  'b in ["x", "z"]',
  'b < "m"',
  'c',
  'not c',
  'c == false',
  'a > 5 and b == "y"',
  'a > 5 or c',
  'not (a > 5 and c)',
  'b == null',
  'x.y > 1',
  'items.0.sku == "s1"',
  'true',
  'false',
] as const;
export const APPROVAL_PATHS = ['a', 'b', 'c', 'x.y', 'items.0.sku', 'note', 'zz'] as const;
export const REASONS = ['operator reason one', 'not for agents', 'needs a human'] as const;
/** Tool argument schemas the reference evaluator can check by hand (see `schemaAccepts`). */
export const SCHEMAS: readonly unknown[] = [
  { type: 'object', properties: { a: { type: 'number' } } },
  { type: 'object', required: ['b'] },
  true,
  false,
];
export const PII = 'jane@example.com';

/** What the generated SCHEMAS accept, written out by hand (no ajv). */
export function schemaAccepts(schema: unknown, args: JsonObject): boolean {
  if (schema === true) return true;
  if (schema === false) return false;
  const s = schema as { required?: string[]; properties?: { a?: unknown } };
  if (s.required) return s.required.every((k) => Object.hasOwn(args, k));
  if (s.properties?.a) return !Object.hasOwn(args, 'a') || typeof args['a'] === 'number';
  throw new Error('schemaAccepts: not one of SCHEMAS');
}

// ---------------------------------------------------------------------------------------------------
// Policy documents

const some = <T>(items: readonly T[], max = 2): fc.Arbitrary<T[]> =>
  fc.array(fc.constantFrom(...items), { minLength: 1, maxLength: max });
/** `arb` with probability `p`, else undefined (which is what it shrinks to). */
const maybe = <T>(arb: fc.Arbitrary<T>, p: number): fc.Arbitrary<T | undefined> =>
  fc.oneof(
    { arbitrary: fc.constant(undefined), weight: Math.round((1 - p) * 20) },
    { arbitrary: arb, weight: Math.round(p * 20) },
  );

/** Drop keys whose value is undefined (so documents compare and print cleanly). */
function clean<T extends object>(o: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out as T;
}

function selectorsArb(withEnvs: boolean, toolsP = 0.6): fc.Arbitrary<GenSelectors> {
  return fc
    .record({
      tools: maybe(some(RULE_TOOLS, 3), toolsP),
      kinds: maybe(some(SELECTOR_KINDS), 0.2),
      tags: maybe(some(TAGS), 0.2),
      envs: withEnvs ? maybe(some(ENVS), 0.3) : fc.constant(undefined),
      teams: maybe(some(TEAMS), 0.2),
      users: maybe(some(USERS), 0.15),
      agents: maybe(some(AGENTS), 0.15),
    })
    .map(clean);
}

const approvalArb: fc.Arbitrary<GenApproval> = fc
  .record({
    kind: maybe(fc.constantFrom('k_one', 'k.two', 'refund_over_cap'), 0.5),
    capability: maybe(fc.array(fc.constantFrom(...APPROVAL_PATHS), { maxLength: 3 }), 0.5),
    presentation: maybe(fc.array(fc.constantFrom(...APPROVAL_PATHS), { maxLength: 3 }), 0.5),
  })
  .map(clean);

type Effect = 'allow' | 'deny' | 'abort' | 'confirm';

export function ruleArb(
  withEnvs: boolean,
  effects: readonly Effect[] = ['allow', 'allow', 'allow', 'allow', 'deny', 'deny', 'abort', 'confirm'],
): fc.Arbitrary<GenRule> {
  return fc
    .record({
      selectors: selectorsArb(withEnvs),
      effect: fc.constantFrom(...effects),
      when: maybe(fc.constantFrom(...CONDITIONS), 0.35),
      confirm: maybe(fc.oneof(fc.constant(true as const), fc.constantFrom(...CONDITIONS)), 0.35),
      approval: maybe(approvalArb, 0.35),
      reason: maybe(fc.constantFrom(...REASONS), 0.5),
      explicitId: fc.boolean(),
    })
    .map(({ selectors, effect, when, confirm, approval, reason, explicitId }) => {
      const rule: GenRule = { ...selectors };
      if (explicitId) rule.id = 'ID'; // replaced by a unique id when the file is assembled
      if (when !== undefined) rule.when = when;
      if (effect === 'abort') rule.abort = true;
      else if (effect !== 'confirm') rule.allow = effect === 'allow';
      if (effect === 'allow' || effect === 'confirm') {
        // A confirm-only rule has nothing but its confirm to say.
        if (confirm !== undefined || effect === 'confirm') rule.confirm = confirm ?? true;
        if (approval !== undefined) rule.approval = approval;
      }
      if (reason !== undefined) rule.reason = reason;
      return rule;
    });
}

function guardArb(withEnvs: boolean): fc.Arbitrary<GenGuard> {
  return fc
    .record({
      selectors: selectorsArb(withEnvs, 0.7),
      action: maybe(fc.constantFrom('deny' as const, 'require_approval' as const), 0.7),
      explicitId: fc.boolean(),
    })
    .map(({ selectors, action, explicitId }) => {
      const g: GenGuard = { ...(explicitId ? { id: 'ID' } : {}), guard: 'pii', ...selectors };
      if (action !== undefined) g.action = action;
      return g;
    });
}

/** A catalogue entry; `schemaP` is the chance of a schema (ajv compiles each in ~20 ms, so 0 by default). */
function toolArb(schemaP: number): fc.Arbitrary<GenTool> {
  return fc
    .record({
      kind: fc.constantFrom(...KINDS),
      tags: maybe(some(TAGS), 0.5),
      confirm: maybe(fc.constant(true as const), 0.15),
      schema: schemaP > 0 ? maybe(fc.constantFrom(...SCHEMAS), schemaP) : fc.constant(undefined),
    })
    .map(clean);
}

const modeArb = fc.constantFrom<Mode>('allow', 'allow', 'deny', 'side_effects');

/** One file's document, without its catalogue (assigned across files by `setArb`). */
function docArb(policy: string, declareEnvs: boolean, maxRules: number): fc.Arbitrary<GenDoc> {
  const defaultArb: fc.Arbitrary<GenDoc['default']> = declareEnvs
    ? fc.oneof(fc.constant(undefined), modeArb, fc.record({ dev: modeArb, prod: modeArb }))
    : fc.oneof(fc.constant(undefined), modeArb);
  return fc
    .record({
      version: maybe(fc.constantFrom('1', '2'), 0.5),
      // Mostly tool selectors, so that a scope often selects some requests and not others.
      scope: maybe(selectorsArb(declareEnvs, 0.7), 0.25),
      default: defaultArb,
      rules: fc.array(ruleArb(declareEnvs), { maxLength: maxRules }),
      guards: fc.array(guardArb(declareEnvs), { maxLength: 2 }),
      limits: maybe(fc.record({ max_calls: fc.integer({ min: 0, max: 8 }) }), 0.3),
    })
    .map(({ version, scope, default: def, rules, guards, limits }) => {
      const doc: GenDoc = { policy };
      if (version !== undefined) doc.version = version;
      if (scope !== undefined && Object.keys(scope).length > 0) doc.scope = scope; // an empty scope is a load error
      if (declareEnvs) doc.environments = [...ENVS];
      if (def !== undefined) doc.default = def;
      if (rules.length > 0) doc.rules = rules.map((r, i) => (r.id === undefined ? r : { ...r, id: `${policy}-r${i}` }));
      if (guards.length > 0)
        doc.guards = guards.map((g, i) => (g.id === undefined ? g : { ...g, id: `${policy}-g${i}` }));
      if (limits !== undefined) doc.limits = limits;
      return doc;
    });
}

export interface SetOptions {
  minFiles?: number;
  maxFiles?: number;
  maxRules?: number;
  /** Chance that a catalogue entry has an argument schema (default 0: schemas are slow to compile). */
  schemaP?: number;
}

/** A random, valid policy set: 0..3 files (by default), an environment or none, a shared catalogue. */
export function setArb(options: SetOptions = {}): fc.Arbitrary<GenSet> {
  const { minFiles = 0, maxFiles = 3, maxRules = 6, schemaP = 0 } = options;
  return fc
    .record({
      env: fc.constantFrom<GenSet['env']>(null, 'dev', 'prod'),
      n: fc.integer({ min: minFiles, max: maxFiles }),
    })
    .chain(({ env, n }) =>
      fc.record({
        env: fc.constant(env),
        docs: fc.tuple(
          ...Array.from({ length: n }, (_, i) =>
            fc.boolean().chain((declare) => docArb(`p${i}`, env !== null && declare, maxRules)),
          ),
        ),
        catalogue: fc.uniqueArray(
          fc.record({ pattern: fc.constantFrom(...CATALOGUE_PATTERNS), file: fc.nat(), tool: toolArb(schemaP) }),
          {
            selector: (e) => e.pattern,
            maxLength: n === 0 ? 0 : 8,
          },
        ),
      }),
    )
    .map(({ env, docs, catalogue }) => {
      const files: GenFile[] = docs.map((doc, i) => ({ name: `p${String(i).padStart(2, '0')}.json`, doc }));
      for (const { pattern, file, tool } of catalogue) {
        const doc = files[file % files.length]!.doc;
        (doc.tools ??= {})[pattern] = tool;
      }
      return { env, files };
    });
}

// ---------------------------------------------------------------------------------------------------
// Requests and identities

export function argsArb(value: fc.Arbitrary<string> = fc.constantFrom('x', 'y', 'z')): fc.Arbitrary<JsonObject> {
  return fc
    .record({
      a: maybe(
        fc.oneof(
          fc.integer({ min: 0, max: 8 }),
          fc.integer({ min: 0, max: 8 }),
          fc.constant(1.5),
          fc.constant('5'),
          fc.constant(null),
        ),
        0.75,
      ),
      b: maybe(fc.oneof(value, value, fc.constant(3), fc.constant(PII)), 0.75),
      c: maybe(fc.oneof(fc.boolean(), fc.boolean(), fc.constant('true')), 0.6),
      note: maybe(fc.oneof(value, fc.constant(`mail ${PII}`)), 0.2),
      x: maybe(fc.record({ y: fc.oneof(fc.integer({ min: 0, max: 3 }), value) }), 0.2),
      items: maybe(fc.array(fc.record({ sku: fc.oneof(fc.constant('s1'), value) }), { maxLength: 2 }), 0.2),
    })
    .map((o) => clean(o) as JsonObject);
}

export const runArb: fc.Arbitrary<RunView | undefined> = maybe(
  fc.record({
    id: fc.constant('run-1'),
    steps: fc.array(fc.record({ tool: fc.constantFrom(...REQUEST_TOOLS) }), { maxLength: 5 }),
  }),
  0.6,
);

export function requestArb(value?: fc.Arbitrary<string>): fc.Arbitrary<DecideRequest> {
  return fc
    .record({ tool: fc.constantFrom(...REQUEST_TOOLS), args: argsArb(value), run: runArb })
    .map(({ tool, args, run }) => (run === undefined ? { tool, args } : { tool, args, run }));
}

export const identityArb: fc.Arbitrary<Identity> = fc.record({
  user: fc.constantFrom(...USERS),
  team: fc.constantFrom(null, ...TEAMS),
  agent: fc.constantFrom(null, ...AGENTS),
  roles: fc.constantFrom<string[]>([], ['approver']),
});

// ---------------------------------------------------------------------------------------------------
// Loading

const encoder = new TextEncoder();

/**
 * A file's bytes. Files whose name ends in an odd digit write every one-element selector list as a
 * single string (`"tools": "t0"`), which means the same (docs/spec.md section 2.2), so random sets
 * load both spellings.
 */
export function fileBytes(f: GenFile): { path: string; bytes: Uint8Array } {
  const odd = /[13579]\.json$/.test(f.name);
  return { path: f.name, bytes: encoder.encode(JSON.stringify(odd ? scalarSelectors(f.doc) : f.doc)) };
}

const SELECTOR_NAMES = ['tools', 'kinds', 'tags', 'envs', 'teams', 'users', 'agents'] as const;

function scalarSelectors(doc: GenDoc): object {
  const spell = <T extends GenSelectors>(sel: T): T => {
    const out: Record<string, unknown> = { ...(sel as object) };
    for (const k of SELECTOR_NAMES) if (sel[k]?.length === 1) out[k] = sel[k][0];
    return out as T;
  };
  return {
    ...doc,
    ...(doc.scope ? { scope: spell(doc.scope) } : {}),
    ...(doc.rules ? { rules: doc.rules.map(spell) } : {}),
    ...(doc.guards ? { guards: doc.guards.map(spell) } : {}),
  };
}

/** Load a generated set as the service would (file-name order, the set's environment). */
export function toPolicySet(gen: GenSet): PolicySet {
  return buildPolicySet(gen.files.map(fileBytes), { env: gen.env });
}

/** Every catalogue pattern of the set with its file, in load order (file-name order, then key order). */
export function cataloguePatterns(gen: GenSet): { pattern: string; file: GenFile; tool: GenTool }[] {
  const files = [...gen.files].sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  return files.flatMap((file) =>
    Object.entries(file.doc.tools ?? {}).map(([pattern, tool]) => ({ pattern, file, tool })),
  );
}
