// The policy set as decide() reads it: for each tool name, the catalogue entries that describe it and
// the rules and guards each file could apply to it, computed once per name from indexes built at load.
import type { Glob } from './glob.js';
import { selectorsMatch, TOOL_SELECTORS, type Subject } from './match.js';
import {
  isArgsGuard,
  type CatalogueEntry,
  type FilePlan,
  type Limit,
  type PlannedLimit,
  type PolicyFile,
  type PolicySet,
  type Rule,
  type ToolPlan,
  type ToolView,
} from './model.js';

const PLAN_CACHE_SIZE = 10_000;
const NO_TAGS: ReadonlySet<string> = new Set();
const OUT_OF_SCOPE: FilePlan = { inScope: false, rules: [], guards: [] };
const NO_LIMITS: readonly PlannedLimit[] = Object.freeze([]);

/**
 * Index the rules so that deciding never scans every rule: per tool name, the rules and guards
 * whose tool-dependent selectors match are computed once (from an exact-name index, a literal-prefix
 * index of the globs and the rules without `tools`) and memoised in a bounded map.
 */
export function createPolicySet(files: readonly PolicyFile[], env: string | null): PolicySet {
  const catalogues = files.map(indexCatalogue);
  const indexes = files.map(indexRules);
  const cache = new Map<string, ToolPlan>();
  const limits: readonly Limit[] = files.flatMap((f): Limit[] => [...f.budgets, ...f.rateLimits]);

  const computePlan = (tool: string): ToolPlan => {
    const entries = catalogues
      .map((c) => c.exact.get(tool) ?? firstMatch(c.globs.candidates(tool), tool))
      .filter((e) => e !== undefined);
    // One view per distinct description (kind and tags) of the tool, in load order; `unknown` when none.
    const described: Description[] = entries.length === 0 ? [{ entry: null, kind: 'unknown', tags: NO_TAGS }] : [];
    for (const e of entries) addDescription(described, { entry: e, kind: e.kind, tags: e.tags });
    // With several, also all of them at once (the most severe kind, every tag): a restricting rule
    // that names one file's kind and another file's tag still applies. A view only ever adds answers
    // that count if more severe, so it cannot loosen anything.
    if (entries.length > 1) {
      const kind = entries.reduce((k, e) => (KIND_SEVERITY[e.kind] > KIND_SEVERITY[k] ? e.kind : k), entries[0]!.kind);
      addDescription(described, { entry: null, kind, tags: new Set(entries.flatMap((e) => [...e.tags])) });
    }
    const candidates = indexes.map((index) =>
      [...(index.exact.get(tool) ?? []), ...index.globbed.candidates(tool), ...index.untooled].sort(
        (a, b) => a.index - b.index,
      ),
    );
    const views = described.map(({ entry, kind, tags }): ToolView => {
      const subject: Subject = { tool, kind, tags, env };
      const filePlans = files.map((file, i): FilePlan => {
        // A file whose scope leaves this description of the tool out gives no answer under it
        // (docs/spec.md section 2.7); its caller selectors are checked per request.
        if (file.scope !== undefined && !selectorsMatch(file.scope, subject, TOOL_SELECTORS)) return OUT_OF_SCOPE;
        const rules = candidates[i]!;
        return {
          inScope: true,
          rules: rules.filter((r, k) => rules[k - 1] !== r && selectorsMatch(r.selectors, subject, TOOL_SELECTORS)),
          guards: file.guards.filter(isArgsGuard).filter((g) => selectorsMatch(g.selectors, subject, TOOL_SELECTORS)),
        };
      });
      return { entry, kind: subject.kind, tags: subject.tags, files: filePlans };
    });
    return { tool, entries, views, limits: limits.length === 0 ? NO_LIMITS : planLimits(files, views, tool, env) };
  };

  return {
    files,
    env,
    identities: files.map((f) => f.identity),
    digests: files.map((f) => f.identity.digest),
    limits,
    plan(tool: string): ToolPlan {
      let plan = cache.get(tool);
      if (plan === undefined) {
        plan = computePlan(tool);
        if (cache.size >= PLAN_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
        cache.set(tool, plan);
      }
      return plan;
    },
  };
}

/**
 * The budgets and rate limits whose tool-dependent selectors match the tool under some description
 * that their file's scope selects, in load order. Limits only restrict: one that matches under any
 * description applies (as a restricting rule counts under its most severe description).
 */
function planLimits(
  files: readonly PolicyFile[],
  views: readonly ToolView[],
  tool: string,
  env: string | null,
): readonly PlannedLimit[] {
  const out: PlannedLimit[] = [];
  files.forEach((file, i) => {
    for (const limit of [...file.budgets, ...file.rateLimits]) {
      const selected = views.some(
        (view) =>
          view.files[i]?.inScope === true &&
          selectorsMatch(limit.selectors, { tool, kind: view.kind, tags: view.tags, env }, TOOL_SELECTORS),
      );
      if (selected) out.push({ limit, fileScope: file.scope });
    }
  });
  return out.length === 0 ? NO_LIMITS : out;
}

/**
 * Items filed under the literal prefix of their globs (the text before the first `*`, `?` or `[`):
 * the candidates for a name are the items filed under one of its prefixes, a superset of the items
 * whose glob matches it. So a new tool name costs one map lookup per character, not a test of every
 * glob in the set.
 */
class PrefixIndex<T> {
  private readonly byPrefix = new Map<string, T[]>();
  private longest = 0;

  add(glob: Glob, item: T): void {
    const prefix = /^[^*?[]*/.exec(glob.source)![0];
    this.longest = Math.max(this.longest, prefix.length);
    const list = this.byPrefix.get(prefix);
    if (list === undefined) this.byPrefix.set(prefix, [item]);
    else if (list[list.length - 1] !== item) list.push(item);
  }

  candidates(name: string): T[] {
    const out: T[] = [];
    // Only as far as the longest prefix filed (globs are at most 256 characters), whatever the name.
    for (let k = 0; k <= Math.min(name.length, this.longest); k++) {
      const list = this.byPrefix.get(name.slice(0, k));
      if (list !== undefined) out.push(...list);
    }
    return out;
  }
}

/** One file's catalogue: exact names, then its globs (the first in file order wins: docs/spec.md section 2). */
function indexCatalogue(file: PolicyFile): {
  exact: ReadonlyMap<string, CatalogueEntry>;
  globs: PrefixIndex<CatalogueEntry>;
} {
  const exact = new Map<string, CatalogueEntry>();
  const globs = new PrefixIndex<CatalogueEntry>();
  for (const entry of file.tools) {
    if (entry.glob.literal) exact.set(entry.pattern, entry);
    else globs.add(entry.glob, entry);
  }
  return { exact, globs };
}

function firstMatch(candidates: readonly CatalogueEntry[], tool: string): CatalogueEntry | undefined {
  let first: CatalogueEntry | undefined;
  for (const e of candidates) {
    if ((first === undefined || e.order < first.order) && e.glob.test(tool)) first = e;
  }
  return first;
}

interface RuleIndex {
  /** Rules by each literal name in their `tools`. */
  readonly exact: ReadonlyMap<string, readonly Rule[]>;
  /** Rules by the literal prefix of each glob in their `tools`. */
  readonly globbed: PrefixIndex<Rule>;
  /** Rules without `tools`: candidates for every tool. */
  readonly untooled: readonly Rule[];
}

function indexRules(file: PolicyFile): RuleIndex {
  const exact = new Map<string, Rule[]>();
  const globbed = new PrefixIndex<Rule>();
  const untooled: Rule[] = [];
  for (const rule of file.rules) {
    const tools = rule.selectors.tools;
    if (tools === undefined) {
      untooled.push(rule);
      continue;
    }
    for (const g of tools) {
      if (!g.literal) {
        globbed.add(g, rule);
        continue;
      }
      const list = exact.get(g.source) ?? [];
      if (list[list.length - 1] !== rule) list.push(rule);
      exact.set(g.source, list);
    }
  }
  return { exact, globbed, untooled };
}

/** A view before its rules are selected. */
type Description = Pick<ToolView, 'entry' | 'kind' | 'tags'>;

/** Adds d unless a description with its kind and tags is there already. */
function addDescription(list: Description[], d: Description): void {
  if (!list.some((x) => x.kind === d.kind && sameSet(x.tags, d.tags))) list.push(d);
}

// Most severe last; `unknown` never reaches here (it is the description of no entry).
const KIND_SEVERITY: Readonly<Record<CatalogueEntry['kind'], number>> = {
  read_only: 0,
  local_mutation: 1,
  remote_mutation: 2,
  destructive: 3,
};

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}
