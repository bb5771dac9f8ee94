// `gatehouse check [DIR|FILE] [--env E] [--tool T --team X --user U --agent A]`: validate policies
// (exit 2 with every problem) and summarise them, or show the rules that apply to one caller's tool.
import {
  CALLER_SELECTORS,
  CHECKS,
  countUsers,
  listOf,
  TOOL_SELECTORS,
  type SelectorName,
  type Subject,
} from '../policy/match.js';
import type { DefaultMode, EffectiveKind, PolicySet, Rule, Selectors } from '../policy/model.js';
import { defaultOverlaps } from '../policy/overlap.js';
import { TOOL_NAME_PATTERN } from '../policy/request.js';
import { undecidableRules } from '../policy/undecidable.js';
import { defineCommand, parseCommand } from './args.js';
import { CALLER_OPTIONS, loadPoliciesOrReport, noteDefaultedEnv, servedEnvOf } from './caller.js';
import { EXIT, type Io } from './io.js';

const TOOL_NAME = new RegExp(TOOL_NAME_PATTERN, 'u'); // as ajv compiles it

export const CHECK = defineCommand({
  name: 'check',
  usage: `usage: gatehouse check [DIR|FILE] [--env E] [--tool T [--team X] [--user U] [--agent A]]

Validates the policy files of DIR (default: ./policies), or one FILE, as the service loads them.
Valid: one line per file (policy, digest, counts, default, scope) and "ok". With --tool: the rules
that apply to that tool for that caller, in order, and what each one does. On stderr, a warning for
each file without a scope whose default tightens a tool another file allows, and for each abort or
deny rule whose condition cannot be decided for common inputs (a pipe, a glob, a redirection, a
relative path), so that it applies to them too (the exit status stays 0).

options:
  --env E       the environment to load (default: POLICY_ENV, else dev unless NODE_ENV=production,
                as the service serves)
  --tool T      show the rules for the tool T
  --team X      the caller's team (with --tool)
  --user U      the caller's user, the token's sub (with --tool)
  --agent A     the caller's agent (with --tool)
                a rule that depends on a caller property not given is marked "only for ..."
  -h, --help    show this help

exit status: 0 valid; 2 a problem in the files (each as file:line:column: key: message) or in the arguments
`,
  options: { ...CALLER_OPTIONS, tool: { type: 'string' } },
  positionals: { min: 0, max: 1 },
});

export async function runCheck(argv: string[], io: Io): Promise<number> {
  const parsed = parseCommand(argv, CHECK, io);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const target = positionals[0] ?? 'policies';
  // The service refuses such a name (422): showing rules for it would describe a request that never reaches them.
  if (values.tool !== undefined && !TOOL_NAME.test(values.tool)) {
    io.err(
      '--tool: not a tool name the service accepts (ASCII letters, digits and _ . : / -, at most 128, no "." or ".." path segment)\n',
    );
    return EXIT.invalid;
  }
  const served = servedEnvOf(values);
  const set = await loadPoliciesOrReport(target, served.env, io);
  if (set === null) return EXIT.invalid;
  noteDefaultedEnv(set, served, io);
  // Warnings, not problems: the files are valid, and may mean it.
  for (const o of defaultOverlaps(set)) {
    io.err(
      `warning: ${o.file.path}: its default (${o.file.defaultMode}) also applies to tools other files decide, e.g. ${o.tool}: ` +
        `rule "${o.allowedBy.rule}" of ${o.allowedBy.file.path} allows it, and this default answers ${o.answer}; give this file a scope, or a default of allow\n`,
    );
  }
  for (const u of undecidableRules(set)) {
    const at = u.rule.whenAt ?? { line: 1, column: 1 };
    const effect = u.rule.effect === 'abort' ? 'aborts' : 'denies';
    io.err(
      `warning: ${u.file.path}:${at.line}:${at.column}: rules.${u.rule.index}.when: rule "${u.rule.id}" ${effect} whenever its condition cannot be decided, ` +
        `as for ${u.inputs.join(', ')} (${u.why}); if that is not meant, decide those inputs in the condition, e.g. with has()\n`,
    );
  }
  if (values.tool === undefined) {
    for (const f of set.files) {
      // The version as written (`3`, `v3`, `2026-01`): prefixing a `v` would print `vv3`.
      const id =
        f.identity.version === undefined ? f.identity.policy : `${f.identity.policy} version ${f.identity.version}`;
      const counts = `${plural(f.rules.length, 'rule')}, ${plural(f.tools.length, 'tool')}, ${plural(f.guards.length, 'guard')}`;
      io.out(
        `${f.path}  ${id}  ${f.identity.digest}  ${counts}  default ${f.defaultMode}${f.scope ? `  scope ${describeSelectors(f.scope)}` : ''}\n`,
      );
    }
    const where = set.env === null ? '' : ` for environment ${set.env}`;
    io.out(
      set.files.length === 0
        ? `no policy files: every call is decided by the built-in side_effects default with an empty catalogue${where}\n`
        : `ok: ${plural(set.files.length, 'file')}${where}\n`,
    );
    return EXIT.ok;
  }
  io.out(effectiveRules(set, values.tool, { team: values.team, user: values.user, agent: values.agent }));
  return EXIT.ok;
}

interface Caller {
  team?: string | undefined;
  user?: string | undefined;
  agent?: string | undefined;
}

/** The rules that would be considered for this tool and caller, in order, with what each does. */
function effectiveRules(set: PolicySet, tool: string, caller: Caller): string {
  const plan = set.plan(tool);
  const lines: string[] = [];
  const described = plan.views.map(
    (v) =>
      `kind ${v.kind}, tags [${[...v.tags].join(', ')}], ${v.entry ? `catalogue entry "${v.entry.pattern}" (${v.entry.policy})` : 'not in any catalogue'}`,
  );
  lines.push(
    `tool ${tool}: ${described.join(' | ')}${plan.entries.some((e) => e.validate) ? ', has a schema' : ''}${plan.entries.some((e) => e.confirm) ? ', always confirms' : ''}`,
  );
  // A user id is personal data: never echoed, only whether one was given.
  lines.push(
    `caller: team ${caller.team ?? '(any)'}, user ${caller.user === undefined ? '(any)' : '(given)'}, agent ${caller.agent ?? '(any)'}${set.env ? `; environment ${set.env}` : ''}`,
  );
  if (plan.views.length > 1)
    lines.push(
      'the catalogues describe this tool in several ways: every file answers under each, and its most severe answer counts',
    );
  plan.views.forEach((view, v) => {
    if (plan.views.length > 1) lines.push('', `as ${described[v]}:`);
    const subject: Subject = {
      tool,
      kind: view.kind,
      tags: view.tags,
      env: set.env,
      identity: { user: caller.user ?? '', team: caller.team ?? null, agent: caller.agent ?? null, roles: [] },
    };
    let answering = 0;
    set.files.forEach((file, i) => {
      lines.push('', `${file.identity.policy}  (${file.path})`);
      if (file.scope) {
        const scope = callerFit(file.scope, subject, caller);
        lines.push(`  scope: ${describeSelectors(file.scope)}`);
        if (!view.files[i]?.inScope || scope.excluded) {
          lines.push(
            `  outside the scope for this ${view.files[i]?.inScope ? 'caller' : 'tool'}: the file gives no answer`,
          );
          return;
        }
        if (scope.only.length)
          lines.push(`  (the scope is ${scope.only.join('; ')}: for other callers the file gives no answer)`);
      }
      answering++;
      let n = 0;
      for (const rule of view.files[i]?.rules ?? []) {
        const { only, excluded } = callerFit(rule.selectors, subject, caller);
        if (excluded) continue;
        lines.push(`  ${++n}. ${rule.id}: ${describeRule(rule)}${only.length ? `  (${only.join('; ')})` : ''}`);
      }
      if (n === 0) lines.push('  (no rule applies)');
      lines.push(`  default: ${describeDefault(file.defaultMode, view.kind)}`);
      if (file.maxCalls !== undefined) lines.push(`  limit: abort after ${file.maxCalls} calls in a run`);
      for (const g of view.files[i]?.guards ?? []) lines.push(`  guard ${g.id}: ${g.guard} → ${g.action}`);
    });
    if (set.files.length > 0 && answering === 0) {
      lines.push(
        '',
        `no file's scope selects this call: the built-in default answers, ${describeDefault('side_effects', view.kind)}`,
      );
    }
  });
  if (set.files.length === 0) lines.push('', `no policy files: default ${describeDefault('side_effects', 'unknown')}`);
  return `${lines.join('\n')}\n`;
}

/** How a rule's or scope's caller selectors meet the caller: excluded, or `only for …` each selector the caller did not give. */
function callerFit(sel: Selectors, subject: Subject, caller: Caller): { only: string[]; excluded: boolean } {
  const only: string[] = [];
  let excluded = false;
  for (const name of CALLER_SELECTORS) {
    if (sel[name] === undefined) continue;
    if (caller[name.slice(0, -1) as keyof Caller] === undefined) only.push(`only for ${selectorText(sel, name)}`);
    else if (!CHECKS[name](sel, subject)) excluded = true;
  }
  return { only, excluded };
}

/** `tools [refund]; teams [support]; 3 users`: user ids are counted, never shown. */
function describeSelectors(sel: Selectors): string {
  return [...TOOL_SELECTORS, ...CALLER_SELECTORS]
    .filter((name) => sel[name] !== undefined)
    .map((name) => selectorText(sel, name))
    .join('; ');
}

function selectorText(sel: Selectors, name: SelectorName): string {
  return name === 'users' ? countUsers(sel.users?.size ?? 0) : `${name} [${listOf(sel, name).join(', ')}]`;
}

function describeRule(rule: Rule): string {
  // A confirm-only rule allows nothing: it asks about what another rule or the default allows.
  const parts: string[] = [rule.effect === 'confirm' ? 'confirm only (allows nothing itself)' : rule.effect];
  if (rule.when) parts.push(`when \`${rule.when.source}\``);
  if (rule.confirm === true) parts.push('asks for approval');
  else if (rule.confirm) parts.push(`asks for approval when \`${rule.confirm.source}\``);
  if (rule.approval?.kind) parts.push(`approval kind ${rule.approval.kind}`);
  const e = rule.eligibility;
  if (e?.approvers) {
    const who = [
      e.approvers.roles && `roles [${e.approvers.roles.join(', ')}]`,
      e.approvers.teams && `teams [${e.approvers.teams.join(', ')}]`,
      e.approvers.users && countUsers(e.approvers.users.length),
    ].filter((x): x is string => typeof x === 'string');
    parts.push(`answered by ${who.join(' and ')}`);
  }
  if (e?.quorum) parts.push(`${e.quorum} approvers must grant`);
  if (e?.separate_from_requester === 'team') parts.push("no approver of the requester's team");
  if (rule.reason) parts.push(`reason: ${rule.reason}`);
  return parts.join('; ');
}

function describeDefault(mode: DefaultMode, kind: EffectiveKind): string {
  if (mode !== 'side_effects') return mode;
  const d =
    kind === 'read_only' || kind === 'local_mutation'
      ? 'allow'
      : kind === 'remote_mutation'
        ? 'require_approval'
        : 'deny';
  return `side_effects → ${d} (kind ${kind})`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
