// The second-file trap (docs/cli.md, `gatehouse check`): every file without a `scope` answers every
// call, so its default also reaches tools that only other files mean to decide. A file that says
// nothing about a tool another file allows by a rule, and whose default is stricter than allow,
// tightens that tool for everyone, and the decision then names that file's default as its reason.
// This finds such files, with one example tool each, so that `check` can warn about them.
import type { DefaultMode, EffectiveKind, PolicyFile, PolicySet } from './model.js';
import { TOOL_NAME_PATTERN } from './request.js';

const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN, 'u');

export interface DefaultOverlap {
  /** The file whose default reaches too far. */
  readonly file: PolicyFile;
  /** A tool another file allows by a rule and this file's default tightens. */
  readonly tool: string;
  /** What this file's default answers for that tool. */
  readonly answer: 'require_approval' | 'deny';
  /** The file and rule that allow the tool. */
  readonly allowedBy: { readonly file: PolicyFile; readonly rule: string };
}

/**
 * For each file without a scope whose default is not `allow`: the first tool (catalogue names and the
 * exact names rules list, in load order) that another file allows by a rule while this file has no
 * rule for it and its default would answer something stricter. Callers and conditions are not
 * considered: the rule may allow only some callers or some arguments, and the default still reaches them.
 */
export function defaultOverlaps(set: PolicySet): DefaultOverlap[] {
  const tools = exampleTools(set.files);
  const out: DefaultOverlap[] = [];
  set.files.forEach((file, i) => {
    if (file.scope !== undefined || file.defaultMode === 'allow') return;
    for (const tool of tools) {
      const hit = overlapFor(set, i, tool);
      if (hit) {
        out.push({ file, tool, ...hit });
        return;
      }
    }
  });
  return out;
}

function overlapFor(set: PolicySet, i: number, tool: string): Omit<DefaultOverlap, 'file' | 'tool'> | null {
  const file = set.files[i]!;
  for (const view of set.plan(tool).views) {
    const own = view.files[i];
    // A rule that allows, denies or aborts: this file decides the tool itself. A confirm-only rule
    // decides nothing, so the default still answers.
    if (own === undefined || own.rules.some((r) => r.effect !== 'confirm')) continue;
    const answer = defaultAnswer(file.defaultMode, view.kind);
    if (answer === 'allow') continue;
    for (let j = 0; j < set.files.length; j++) {
      const other = view.files[j];
      if (j === i || other === undefined || !other.inScope) continue;
      const allows = other.rules.find((r) => r.effect === 'allow');
      if (allows) return { answer, allowedBy: { file: set.files[j]!, rule: allows.id } };
    }
  }
  return null;
}

function defaultAnswer(mode: DefaultMode, kind: EffectiveKind): 'allow' | 'require_approval' | 'deny' {
  if (mode !== 'side_effects') return mode;
  return kind === 'read_only' || kind === 'local_mutation'
    ? 'allow'
    : kind === 'remote_mutation'
      ? 'require_approval'
      : 'deny';
}

/** Tool names the files speak of (that a request can name): exact catalogue names, then exact names in rules' `tools`, once each. */
function exampleTools(files: readonly PolicyFile[]): string[] {
  const names = new Set<string>();
  for (const f of files) for (const e of f.tools) if (e.glob.literal) names.add(e.pattern);
  for (const f of files)
    for (const r of f.rules) for (const g of r.selectors.tools ?? []) if (g.literal) names.add(g.source);
  return [...names].filter((name) => TOOL_NAME.test(name));
}
