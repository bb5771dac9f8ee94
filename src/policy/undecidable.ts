// Rules that restrict by accident (docs/cli.md, `gatehouse check`): an `abort` or `allow: false` rule
// applies wherever its `when` cannot be decided (docs/spec.md section 3.5). Fail closed, as it should
// be, but a rule written against `rm -rf` then also aborts `git diff | head`, since argv() has no
// words for a pipe. This finds such rules by deciding each condition on a few common inputs beside
// plain ones (a pipe, a glob, a redirection for an argument read by argv(); a relative path for one
// read by path()), so that `check` can warn about them.
import { type JsonObject, type JsonValue, setOwn } from '../json/value.js';
import type { ConditionInput } from './condition/compile.js';
import type { PolicyFile, PolicySet, Rule } from './model.js';

export interface UndecidableRule {
  readonly file: PolicyFile;
  readonly rule: Rule;
  /** The common inputs it cannot decide, as the warning names them. */
  readonly inputs: readonly string[];
  /** Why, for the first of them: paths and built-ins, never a value. */
  readonly why: string;
}

/** What every argument the condition reads holds in the plain input: plain words, and an absolute path. */
const PLAIN = '/tmp/notes.txt';
/** The common inputs, each for the arguments a built-in reads. */
const COMMON: readonly (readonly [builtin: 'argv' | 'path', label: string, value: string])[] = [
  ['argv', 'a pipe (`git diff | head`)', 'git diff | head'],
  ['argv', 'a glob (`ls *.ts`)', 'ls *.ts'],
  ['argv', 'a redirection (`sort notes.txt > sorted.txt`)', 'sort notes.txt > sorted.txt'],
  ['path', 'a relative path (`src/index.ts`)', 'src/index.ts'],
];
/** What a `$context` path holds in these inputs: a project directory, as a host would send it. */
const CONTEXT_VALUE = '/srv/project/';

/**
 * The abort and deny rules, in load order, whose `when` is decided on the plain input but not on one
 * or more common ones. Callers and context are fixed (a team, an agent, every `$context` path a
 * directory), so only the arguments make the difference.
 */
export function undecidableRules(set: PolicySet): UndecidableRule[] {
  const out: UndecidableRule[] = [];
  for (const file of set.files) {
    for (const rule of file.rules) {
      if ((rule.effect !== 'abort' && rule.effect !== 'deny') || rule.when === undefined) continue;
      const when = rule.when;
      // The common input in the arguments the built-in reads, the plain one in all others.
      const input = (builtin: 'argv' | 'path' | null, value: string): ConditionInput =>
        inputFor(
          when.paths,
          (path) => (builtin !== null && when.parsed[builtin].includes(path) ? value : PLAIN),
          set.env,
        );
      if (when.evaluate(input(null, PLAIN)) === 'undecidable') continue;
      const hits = COMMON.filter(
        ([builtin, , value]) =>
          when.parsed[builtin].length > 0 && when.evaluate(input(builtin, value)) === 'undecidable',
      );
      const first = hits[0];
      if (first === undefined) continue;
      const why = when.explain(input(first[0], first[2])).why;
      out.push({
        file,
        rule,
        inputs: hits.map(([, label]) => label),
        why: why.startsWith('undecidable: ') ? why.slice('undecidable: '.length) : why,
      });
    }
  }
  return out;
}

function inputFor(paths: readonly string[], value: (path: string) => string, env: string | null): ConditionInput {
  const args: JsonObject = {};
  const context: JsonObject = {};
  for (const path of paths) {
    if (path.startsWith('$context.')) put(context, path.slice('$context.'.length).split('.'), CONTEXT_VALUE);
    else if (!path.startsWith('$')) put(args, path.split('.'), value(path));
  }
  return { args, caller: { user: 'user', team: 'team', agent: 'agent', roles: [] }, context, run: undefined, env };
}

/** Sets the value at a dotted path, making the objects on the way; a path through a value already set is left as it is. */
function put(root: JsonObject, segments: readonly string[], value: JsonValue): void {
  let node = root;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!; // i < length
    const next = Object.hasOwn(node, seg) ? node[seg] : undefined;
    if (i === segments.length - 1) {
      if (next === undefined) setOwn(node, seg, value);
      return;
    }
    if (next === undefined) {
      const made: JsonObject = {};
      setOwn(node, seg, made);
      node = made;
    } else if (typeof next === 'object' && next !== null && !Array.isArray(next)) {
      node = next;
    } else {
      return;
    }
  }
}
