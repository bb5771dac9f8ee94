// GET /tools and /decide cannot disagree (docs/spec.md section 5.5): for every inventory item whose
// status is a decision, every generated call of that tool (arguments its schema accepts, run views
// up to and past every limit, text the pii guard finds; for a glob, names only it describes) gets
// exactly that decision from decide(). Over the policies of test/cases/* for many callers (checked
// with the `never:` property machinery of policy test files: "never anything but the status"), and
// over random policy sets (test/helpers/policy-gen.ts). For the case policies, every `depends` is
// also seen to depend: some generated call gets another decision than another.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/json/value.js';
import { decide } from '../../src/policy/decide.js';
import { sampleToolNames } from '../../src/policy/glob-names.js';
import { inventory, type InventoryItem } from '../../src/policy/inventory.js';
import { caseRequest, readCaseFile, type PolicyCase } from '../../src/policy/cases.js';
import { buildPolicySet, isPolicyTestFileName, readPolicyFiles } from '../../src/policy/load.js';
import type { CatalogueEntry, Decision, Identity, PolicySet, RunView } from '../../src/policy/model.js';
import { checkTarget, type NeverProperty } from '../../src/policy/never.js';
import { argsArb, identityArb, PII, REQUEST_TOOLS, runArb, setArb, toPolicySet } from '../helpers/policy-gen.js';
import { runs } from '../helpers/runs.js';

const DECISIONS: readonly Decision[] = ['allow', 'require_approval', 'deny', 'abort'];
/** A run of `length` steps of other tools. */
const otherSteps = (length: number): RunView => ({
  id: 'run-other',
  steps: Array.from({ length }, () => ({ tool: 'other_tool', decision: 'allow' as const })),
});
/** The smallest `limits.max_calls` of the set: a status is for a run below it (docs/spec.md section 5.5). */
const limitOf = (set: PolicySet): number =>
  Math.min(10_000, ...set.files.map((f) => f.maxCalls ?? Number.POSITIVE_INFINITY));

/** The catalogue entry an item stands for. */
function entryOf(set: PolicySet, item: InventoryItem): CatalogueEntry {
  const entry = set.files.flatMap((f) => f.tools).find((e) => e.pattern === item.name);
  if (entry === undefined) throw new Error(`no entry ${item.name}`);
  return entry;
}

/** Whether `entry` alone describes `name` (the names a glob item speaks for). */
const alone = (set: PolicySet, entry: CatalogueEntry, name: string): boolean => {
  const entries = set.plan(name).entries;
  return entries.length === 1 && entries[0] === entry;
};

/** Names to call an item's tool by: its name, or names its glob alone describes (those rules name first). */
function namesOf(set: PolicySet, entry: CatalogueEntry, seed: number): string[] {
  if (entry.glob.literal) return [entry.pattern];
  const literals = set.files.flatMap((f) =>
    [...f.rules, ...f.guards, ...(f.scope ? [{ selectors: f.scope }] : [])].flatMap((r) => r.selectors.tools ?? []),
  );
  return sampleToolNames({
    from: [entry.glob, ...literals.filter((g) => !g.literal)],
    literals: literals.filter((g) => g.literal).map((g) => g.source),
    keep: (name) => entry.glob.test(name) && alone(set, entry, name),
    seed,
    count: 12,
  });
}

/** A `never:` property over one fixed caller: it breaks when a call gets one of `decisions`. */
function property(identity: Identity, decisions: readonly Decision[], seed: number, run?: RunView): NeverProperty {
  return {
    file: 'inventory.agreement',
    line: 1,
    column: 1,
    key: 'never.0',
    name: 'inventory',
    caller: { claims: identity },
    decisions: new Set(decisions),
    runs: run ? 10 : 60,
    seed,
    ...(run ? { run } : {}),
  };
}

/** The callers a set's rules, guards and scopes tell apart (and none of them), with and without a role and a claim. */
function callersOf(set: PolicySet): Identity[] {
  const named = { teams: new Set<string>(), users: new Set<string>(), agents: new Set<string>() };
  for (const file of set.files) {
    for (const sel of [
      ...file.rules.map((r) => r.selectors),
      ...file.guards.map((g) => g.selectors),
      ...(file.scope ? [file.scope] : []),
    ]) {
      for (const key of ['teams', 'users', 'agents'] as const) for (const v of sel[key] ?? []) named[key].add(v);
    }
  }
  const users = ['test-user', ...named.users];
  const out: Identity[] = [];
  let i = 0;
  for (const team of [null, ...named.teams]) {
    for (const agent of [null, ...named.agents]) {
      out.push({
        user: users[i % users.length]!,
        team,
        agent,
        roles: i % 3 === 1 ? ['admin'] : [],
        ...(i % 2 === 1 ? { claims: { tier: 'gold' } } : {}),
      });
      i++;
    }
  }
  for (const user of users) out.push({ user, team: null, agent: null, roles: ['admin'], claims: { tier: 'gold' } });
  return out;
}

const caseDirs = readdirSync('test/cases').map((d) => join('test/cases', d));

/** The cases of a directory's policy test files: hand-written calls, each by its caller in its environment. */
function casesOf(dir: string): PolicyCase[] {
  return readdirSync(dir)
    .filter(isPolicyTestFileName)
    .flatMap((name) => readCaseFile(join(dir, name), readFileSync(join(dir, name))).cases);
}

const keyOf = (identity: Identity): string => JSON.stringify(identity);

/**
 * `depends` where no call of this caller can get another decision: the inventory does not read what a
 * condition on the arguments can never be for a caller (it says depends, never a wrong status).
 */
const CONSERVATIVE: readonly {
  dir: string;
  tool: string;
  caller: (who: Identity, env: string | null) => boolean;
  why: string;
}[] = [
  {
    dir: 'test/cases/caller-context-run',
    tool: 'refund',
    caller: (who, env) =>
      who.team === null && who.claims?.['tier'] !== 'gold' && !(env === 'dev' && who.roles.includes('admin')),
    why: 'own-team compares an argument with $caller.team, undecidable without a team, so it never allows; no other rule does for this caller',
  },
];

describe('the inventory agrees with decide() on the case policies', () => {
  describe.each(caseDirs)('%s', (dir) => {
    it('every status a decision is the decision of every generated and written call; every depends is seen to depend', async () => {
      const files = await readPolicyFiles(dir).catch(() => []);
      const cases = casesOf(dir);
      let examined = 0;
      let catalogued = 0;
      for (const env of [null, 'dev', 'prod']) {
        let set: PolicySet;
        try {
          set = buildPolicySet(files, { env });
        } catch {
          continue; // an environment the files do not declare, or none where they declare some
        }
        catalogued += set.files.reduce((n, f) => n + f.tools.length, 0);
        // The written cases' callers, whose `depends` must be seen to depend, then callers the rules tell apart.
        const written = new Map(cases.filter((c) => c.env === env).map((c) => [keyOf(c.identity), c.identity]));
        for (const [c, identity] of [...written.values(), ...callersOf(set)].entries()) {
          for (const item of inventory(set, identity).tools) {
            examined++;
            const entry = entryOf(set, item);
            const where = `${dir} env ${env} caller ${keyOf(identity)} ${item.name} (${item.status})`;
            const names = namesOf(set, entry, c);
            if (names.length === 0) {
              // No request can name it, or another entry describes every name it matches.
              expect(entry.glob.literal ? 'deny' : 'depends', where).toBe(item.status);
              continue;
            }
            const target = { pattern: item.name, names };
            // No run, the longest run below the limits, and a run of this tool's own allowed calls (what `count($run.steps, …)` counts).
            const below = Math.max(0, limitOf(set) - 1);
            const own = Array.from({ length: Math.min(5, below) }, () => ({
              tool: names[0]!,
              decision: 'allow' as const,
            }));
            // (A property given no run generates some, at the limits too.)
            const runs = [otherSteps(0), otherSteps(below), { id: 'run-own', steps: own }];
            // Every written call of the tool in a run below the limits, made by this caller in this environment (the arguments, run and context it writes).
            const writtenDecisions = cases
              .filter((k) => names.includes(k.tool) && (k.run?.steps?.length ?? 0) < Math.max(1, limitOf(set)))
              .map((k) => decide(set, caseRequest(k), identity))
              .filter((got) => !got.schemaRefused)
              .map((got) => got.decision);
            if (item.status !== 'depends') {
              const others = DECISIONS.filter((d) => d !== item.status);
              for (const run of runs) {
                const check = checkTarget(set, property(identity, others, c, run), target);
                expect(
                  check.counterexample?.got.decision,
                  `${where}: ${JSON.stringify(check.counterexample)}`,
                ).toBeUndefined();
                expect(check.problem, where).toBeUndefined();
              }
              for (const d of writtenDecisions) expect(d, `${where}: a written call`).toBe(item.status);
              continue;
            }
            if (!written.has(keyOf(identity))) continue;
            // A decision is seen when a property forbidding it breaks, or a written call gets it.
            const seen = new Set(writtenDecisions);
            for (const d of DECISIONS) {
              if (
                runs.some(
                  (run) => checkTarget(set, property(identity, [d], c, run), target).counterexample !== undefined,
                )
              )
                seen.add(d);
            }
            const conservative = CONSERVATIVE.find(
              (k) => k.dir === dir && names.includes(k.tool) && k.caller(identity, env),
            );
            if (conservative) expect([...seen], `${where}: ${conservative.why}`).toHaveLength(1);
            else expect(seen.size, `${where}: only ${[...seen].join(', ')} seen`).toBeGreaterThan(1);
          }
        }
      }
      // A directory without a catalogue (no policy file, or files without `tools`) has nothing to examine.
      if (catalogued > 0) expect(examined).toBeGreaterThan(0);
    });
  });
});

describe('the inventory agrees with decide() on random policy sets', () => {
  it('every status a decision is the decision of every generated call of the tool', () => {
    const requests = fc.sample(fc.record({ args: argsArb(), run: runArb }), { seed: 11, numRuns: runs(40) });
    const extra: { args: JsonObject; run?: RunView }[] = [
      { args: {} },
      { args: { b: PII, note: `mail ${PII}` }, run: { steps: Array.from({ length: 9 }, () => ({ tool: 't0' })) } },
      { args: { a: 1, b: 'x', c: true }, run: otherSteps(9_999) },
    ];
    let checked = 0;
    fc.assert(
      fc.property(
        setArb({ maxFiles: 3, maxRules: 6, schemaP: 0.1 }),
        fc.array(identityArb, { minLength: 1, maxLength: 3 }),
        (gen, callers) => {
          const set = toPolicySet(gen);
          for (const identity of callers) {
            for (const item of inventory(set, identity).tools) {
              if (item.status === 'depends') continue;
              const entry = entryOf(set, item);
              const names = entry.glob.literal
                ? [entry.pattern]
                : REQUEST_TOOLS.filter((n) => entry.glob.test(n) && alone(set, entry, n));
              for (const tool of names) {
                for (const { args, run } of [...requests, ...extra]) {
                  if ((run?.steps?.length ?? 0) >= Math.max(1, limitOf(set))) continue; // a status is for a run below its limits
                  const got = decide(set, { tool, args, ...(run ? { run } : {}) }, identity);
                  if (got.schemaRefused) continue;
                  checked++;
                  if (got.decision !== item.status) {
                    throw new Error(
                      `${tool} (${item.name}: ${item.status}) got ${got.decision} by ${got.rule} for ${JSON.stringify({ args, run, identity })}`,
                    );
                  }
                }
              }
            }
          }
        },
      ),
      { seed: 3, numRuns: runs(300) },
    );
    // More than 1000 calls checked in the deep run, in proportion in a shorter one (not vacuous).
    expect(checked).toBeGreaterThan((1000 * runs(300)) / 300);
  });
});
