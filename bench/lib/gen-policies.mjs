// @ts-check
// A deterministic generator of large policy sets for the decide() micro-benchmarks.
//
// N rules in one JSON policy file (plus a catalogue), mixing every selector the language has:
//   35% exact-name allow rules                     tools: [svcK_opI]
//   10% exact-name deny rules limited to a team    tools: [..], teams: [teamT]
//   10% exact-name rules with a condition          tools: [..], when: "amount > X", allow: false
//    5% exact-name allow rules with a confirm      tools: [..], confirm: "amount > X", approval: {...}
//    5% exact-name rules on team + agent           tools: [..], teams: [..], agents: [..]
//    5% exact-name rules on users                  tools: [..], users: [uU]
//   15% namespace globs                            tools: ["mcpK__*"] / ["svcK_op1*"], some with teams
//   10% glob + kind                                tools: ["svcK_*"], kinds: [destructive], deny/abort
//    5% glob + tag + condition                     tools: ["svcK_*"], tags: [money], when: "amount > 1000"
// plus two global rules without `tools` (a kind and a team). The catalogue has N/4 exact tool names
// (kinds cycled, some tagged, every tenth with an argument schema) and one `mcpK__*` glob per
// namespace (N/40 namespaces, at least 5). Rule density per tool name is the same at every N (about
// 2.8 exact-name rules per tool, a handful of glob rules per namespace): a large policy set is
// many tools, not many rules on one tool. The plan sizes per probe are printed with the results.

const KINDS = ['read_only', 'local_mutation', 'remote_mutation', 'destructive'];

/**
 * A rule of the generated file, as written (docs/policies.md).
 * @typedef {object} GenRule
 * @property {string} id
 * @property {string[]} [tools]
 * @property {string[]} [kinds]
 * @property {string[]} [tags]
 * @property {string[]} [teams]
 * @property {string[]} [agents]
 * @property {string[]} [users]
 * @property {boolean} [allow]
 * @property {boolean} [abort]
 * @property {string} [when]
 * @property {string} [confirm]
 * @property {string} [reason]
 * @property {{ kind: string, capability: string[], presentation: string[] }} [approval]
 */
/** @typedef {{ kind: string, tags?: string[], schema?: object }} GenTool */
/** @typedef {{ policy: string, version: string, default: string, tools: Record<string, GenTool>, rules: GenRule[], limits: { max_calls: number } }} GenDoc */

/**
 * mulberry32: small, fast, deterministic.
 * @param {number} seed
 */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * @param {number} n
 * @param {number} [seed]
 * @returns {GenDoc}
 */
export function generatePolicyDoc(n, seed = 42) {
  const rand = rng(seed + n);
  const pick = (/** @type {number} */ k) => Math.floor(rand() * k);
  const toolCount = Math.max(25, Math.floor(n / 4));
  const nsCount = Math.max(5, Math.floor(n / 40));
  const toolName = (/** @type {number} */ i) => `svc${i % nsCount}_op${i}`;

  /** @type {Record<string, GenTool>} */
  const tools = {};
  for (let i = 0; i < toolCount; i++) {
    /** @type {GenTool} */
    const entry = { kind: KINDS[i % 4] };
    if (i % 5 === 0) entry.tags = ['money'];
    else if (i % 7 === 0) entry.tags = ['ops'];
    if (i % 10 === 0)
      entry.schema = { type: 'object', properties: { amount: { type: 'number' }, note: { type: 'string' } } };
    tools[toolName(i)] = entry;
  }
  for (let k = 0; k < nsCount; k++) tools[`mcp${k}__*`] = { kind: 'remote_mutation', tags: ['mcp'] };

  /** @type {GenRule[]} */
  const rules = [
    {
      id: 'global-no-destructive-interns',
      kinds: ['destructive'],
      teams: ['interns'],
      abort: true,
      reason: 'interns never run destructive tools',
    },
    { id: 'global-unknown-contractors', kinds: ['unknown'], teams: ['contractors'], allow: false },
  ];
  for (let r = rules.length; r < n; r++) {
    const id = `r${r}`;
    const tool = toolName(pick(toolCount));
    const ns = pick(nsCount);
    const bucket = r % 20;
    /** @type {GenRule} */
    let rule;
    if (bucket <= 6) rule = { id, tools: [tool], allow: true };
    else if (bucket <= 8)
      rule = { id, tools: [tool], teams: [`team${pick(8)}`], allow: false, reason: 'not for this team' };
    else if (bucket <= 10)
      rule = { id, tools: [tool], when: `amount > ${100 + pick(900)}`, allow: false, reason: 'over the cap' };
    else if (bucket === 11) {
      rule = {
        id,
        tools: [tool],
        allow: true,
        confirm: `amount > ${50 + pick(200)}`,
        reason: 'over the confirm cap',
        approval: { kind: 'spend', capability: ['amount'], presentation: ['amount', 'note'] },
      };
    } else if (bucket === 12)
      rule = { id, tools: [tool], teams: [`team${pick(8)}`], agents: [`bot${pick(4)}`], allow: true };
    else if (bucket === 13) rule = { id, tools: [tool], users: [`u${pick(10)}`], allow: true };
    else if (bucket <= 16) {
      const glob = r % 2 === 0 ? `mcp${ns}__*` : `svc${ns}_op1*`;
      rule = { id, tools: [glob], allow: r % 3 !== 0 };
      if (r % 4 === 0) rule.teams = [`team${pick(8)}`];
    } else if (bucket <= 18)
      rule = {
        id,
        tools: [`svc${ns}_*`],
        kinds: ['destructive'],
        ...(r % 2 === 0 ? { abort: true } : { allow: false }),
      };
    else
      rule = {
        id,
        tools: [`svc${ns}_*`],
        tags: ['money'],
        when: 'amount > 1000',
        allow: false,
        reason: 'money over 1000',
      };
    rules.push(rule);
  }
  return { policy: `generated-${n}`, version: '1', default: 'side_effects', tools, rules, limits: { max_calls: 500 } };
}

/**
 * The request shapes measured, chosen from the generated document so each one exists at every N:
 * the first tool whose decision (by the given `decideTool(tool) → {decision, rule}`) comes from a rule
 * of the wanted sort.
 * @param {GenDoc} doc
 * @param {(tool: string) => { decision: string, rule: string }} decideTool
 */
export function probes(doc, decideTool) {
  const byId = new Map(doc.rules.map((r) => [r.id, r]));
  const exactTools = Object.keys(doc.tools).filter((t) => !t.includes('*'));
  /**
   * @param {string[]} names
   * @param {(res: { decision: string, rule: string }, rule: GenRule) => boolean | undefined} ok
   */
  const find = (names, ok) => {
    for (const name of names) {
      const res = decideTool(name);
      const rule = byId.get(res.rule);
      if (rule && ok(res, rule)) return name;
    }
    throw new Error('no probe found');
  };
  const isExact = (/** @type {GenRule} */ r) => r.tools?.length === 1 && !r.tools[0].includes('*');
  const mcpNames = Array.from({ length: 40 }, (_, k) => `mcp${k}__create_issue`);
  return {
    /** allowed by an exact-name rule (no condition, no approval). */
    exact: find(exactTools, (res, r) => res.decision === 'allow' && isExact(r) && !r.when && !r.confirm),
    /** decided by a namespace glob rule. */
    glob: find(mcpNames, (_res, r) => r.tools?.[0]?.startsWith('mcp')),
    /** in no catalogue, matched by no rule: the default. */
    unknown: 'nobody_knows_this_tool',
    /** denied by an exact-name rule whose `when` was evaluated. */
    condition: find(exactTools, (res, r) => res.decision === 'deny' && isExact(r) && r.when !== undefined),
    /** require_approval from a `confirm` condition: includes building the approval and its hash. */
    confirm: find(exactTools, (res, r) => res.decision === 'require_approval' && r.confirm !== undefined),
  };
}

/**
 * A stream of requests as a host would send them: every exact tool name of the catalogue, one name
 * in each `mcpK__*` namespace and a few names nobody declared, in a fixed shuffled order. What each
 * gets (allow, deny, require_approval, the default) is whatever the generated rules say.
 * @param {GenDoc} doc
 * @param {number} [seed]
 */
export function mixedTools(doc, seed = 7) {
  const names = Object.keys(doc.tools).map((t) => (t.endsWith('__*') ? t.replace('*', 'create_issue') : t));
  for (let k = 0; k < 10; k++) names.push(`undeclared_tool_${k}`);
  const rand = rng(seed);
  for (let i = names.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [names[i], names[j]] = [names[j], names[i]];
  }
  return names;
}

/**
 * FileBytes for buildPolicySet.
 * @param {number} n
 * @param {number} [seed]
 */
export function policyFiles(n, seed = 42) {
  const doc = generatePolicyDoc(n, seed);
  return { doc, files: [{ path: `generated-${n}.json`, bytes: Buffer.from(JSON.stringify(doc)) }] };
}

/** Conditions over the string operators, the built-ins and the roots, cycled by languagePolicyFiles(). */
export const LANGUAGE_CONDITIONS = [
  'lower(note) contains "refund"',
  'note startswith "customer"',
  'note endswith "twice"',
  'note matches "*asked*"',
  'len(note) > 5',
  'path(file) startswith "/repo/"',
  'argv(command) startswith ["git", "status"]',
  'argv(command).0 in ["ls", "cat", "git"]',
  'items contains "b"',
  'count($run.steps, "svc*", "allow") < 3',
  '$caller.team == "team3" and $context.sandbox == "on"',
  '$caller.roles contains "admin" or amount > 100',
];

/** The arguments, run view and context the language set's conditions read. */
/** @type {{ args: import('../../dist/json/value.js').JsonObject, run: import('../../dist/policy/model.js').RunView, context: import('../../dist/json/value.js').JsonObject }} */
export const LANGUAGE_REQUEST = {
  args: {
    amount: 500,
    note: 'customer asked twice',
    file: '/repo/src/../main.ts',
    command: "git status --short 'a b'",
    items: ['a', 'b', 'c'],
  },
  run: {
    id: 'run-1',
    steps: [
      { tool: 'svc1_op3', decision: 'allow' },
      { tool: 'lookup' },
      { tool: 'svc2_op9', decision: 'deny' },
      { tool: 'svc0_op1', decision: 'allow' },
    ],
  },
  context: { sandbox: 'on', repo: 'acme/api' },
};

/**
 * generatePolicyDoc(n), with every condition replaced by one of LANGUAGE_CONDITIONS and a condition
 * from them added to each exact-name allow rule: the same selectors and decisions' mix, and a set
 * dense in the new operators.
 * @param {number} n
 * @param {number} [seed]
 */
export function languagePolicyFiles(n, seed = 42) {
  const doc = generatePolicyDoc(n, seed);
  let k = 0;
  const next = () => LANGUAGE_CONDITIONS[k++ % LANGUAGE_CONDITIONS.length];
  for (const rule of doc.rules) {
    if (rule.when !== undefined) rule.when = next();
    if (rule.confirm !== undefined) rule.confirm = next();
    if (rule.allow === true && rule.tools?.length === 1 && !rule.tools[0].includes('*') && rule.when === undefined)
      rule.when = next();
  }
  return { doc, files: [{ path: `language-${n}.json`, bytes: Buffer.from(JSON.stringify(doc)) }] };
}
