// Selector checks, shared by the plan (tool-dependent selectors, once per tool name), by decide
// (caller selectors, per request) and by explain (all of them, with a reason each).
import type { EffectiveKind, Identity, Selectors } from './model.js';

export type SelectorName = keyof Selectors;

/** What a selector is matched against. */
export interface Subject {
  readonly tool: string;
  readonly kind: EffectiveKind;
  readonly tags: ReadonlySet<string>;
  readonly env: string | null;
  readonly identity?: Identity;
}

type Check = (sel: Selectors, s: Subject) => boolean;

const has = (set: ReadonlySet<string> | undefined, value: string | null | undefined): boolean =>
  set === undefined || (value != null && set.has(value));

export const CHECKS: Readonly<Record<SelectorName, Check>> = {
  tools: (sel, s) => sel.tools === undefined || sel.tools.some((g) => g.test(s.tool)),
  kinds: (sel, s) => has(sel.kinds, s.kind),
  tags: (sel, s) => sel.tags === undefined || [...sel.tags].some((t) => s.tags.has(t)),
  envs: (sel, s) => has(sel.envs, s.env),
  teams: (sel, s) => has(sel.teams, s.identity?.team),
  users: (sel, s) => has(sel.users, s.identity?.user),
  agents: (sel, s) => has(sel.agents, s.identity?.agent),
};

/** Selectors that depend only on the tool and the environment: settled once per tool name. */
export const TOOL_SELECTORS: readonly SelectorName[] = ['tools', 'kinds', 'tags', 'envs'];
/** Selectors that depend on the caller: checked per request. */
export const CALLER_SELECTORS: readonly SelectorName[] = ['teams', 'users', 'agents'];

export function selectorsMatch(sel: Selectors, subject: Subject, names: readonly SelectorName[]): boolean {
  for (const name of names) if (sel[name] !== undefined && !CHECKS[name](sel, subject)) return false;
  return true;
}

export interface SelectorTrace {
  selector: SelectorName;
  matched: boolean;
  why: string;
}

const SUBJECT_TEXT: Readonly<Record<Exclude<SelectorName, 'users'>, (s: Subject) => string>> = {
  tools: (s) => `tool "${s.tool}"`,
  kinds: (s) => `kind ${s.kind}`,
  tags: (s) => (s.tags.size ? `tags ${[...s.tags].join(', ')}` : 'no tags'),
  envs: (s) => (s.env === null ? 'no environment' : `environment ${s.env}`),
  teams: (s) => (s.identity?.team == null ? 'no team' : `team ${s.identity.team}`),
  agents: (s) => (s.identity?.agent == null ? 'no agent' : `agent ${s.identity.agent}`),
};

/** Every selector the rule, guard or scope gives, with whether it matched and why. */
export function traceSelectors(sel: Selectors, subject: Subject): SelectorTrace[] {
  const out: SelectorTrace[] = [];
  for (const name of [...TOOL_SELECTORS, ...CALLER_SELECTORS]) {
    const given = sel[name];
    if (given === undefined) continue;
    const matched = CHECKS[name](sel, subject);
    // User ids are personal data: an explanation counts them, never shows them (teams and agents are named).
    const why =
      name === 'users'
        ? `the user is ${matched ? '' : 'not '}among the ${countUsers(sel.users!.size)} listed`
        : `${SUBJECT_TEXT[name](subject)} ${matched ? 'is' : 'is not'} in [${listOf(sel, name).join(', ')}]`;
    out.push({ selector: name, matched, why });
  }
  return out;
}

/** A selector's list as written (globs by their source). */
export function listOf(sel: Selectors, name: SelectorName): string[] {
  return name === 'tools'
    ? (sel.tools ?? []).map((g) => g.source)
    : [...((sel[name] as ReadonlySet<string> | undefined) ?? [])];
}

export function countUsers(n: number): string {
  return `${n} ${n === 1 ? 'user' : 'users'}`;
}
