// The tool inventory of GET /tools (src/policy/inventory.ts, docs/spec.md section 5.5), by example:
// for one caller, each catalogue entry's status and the rule ids behind it. Whether every status
// agrees with decide() on generated calls is inventory.agreement.test.ts's job; here, what each
// feature of a policy makes of a status.
import { describe, expect, it } from 'vitest';
import { inventory, type ToolStatus } from '../../src/policy/inventory.js';
import { buildPolicySet } from '../../src/policy/load.js';
import type { Identity, PolicySet } from '../../src/policy/model.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

function setOf(files: Record<string, string>, env: string | null = null): PolicySet {
  return buildPolicySet(
    Object.entries(files).map(([path, text]) => ({ path, bytes: enc(text) })),
    { env },
  );
}

const caller = (over: Partial<Identity> = {}): Identity => ({
  user: 'u1',
  team: null,
  agent: null,
  roles: [],
  ...over,
});

/** Each entry's [status, rules]. */
function statuses(set: PolicySet, who: Identity): Record<string, [ToolStatus, readonly string[]]> {
  return Object.fromEntries(inventory(set, who).tools.map((t) => [t.name, [t.status, t.rules]]));
}

interface Case {
  name: string;
  files: Record<string, string>;
  env?: string | null;
  callers: { who: Identity; want: Record<string, [ToolStatus, string[]]> }[];
}

const CASES: Case[] = [
  {
    name: 'exact names: each effect, the side_effects default by kind, catalogue confirm (which never loosens)',
    files: {
      'p.yaml': `
policy: p
tools:
  read: {kind: read_only}
  write: {kind: local_mutation}
  send: {kind: remote_mutation}
  wipe: {kind: destructive}
  ok: {kind: remote_mutation}
  no: {kind: read_only}
  stop: {kind: read_only}
  ask: {kind: read_only}
  always: {kind: read_only, confirm: true}
  always_denied: {kind: destructive, confirm: true}
  unnamed: {kind: read_only}
rules:
  - {id: ok, tools: ok, allow: true}
  - {id: no, tools: no, allow: false}
  - {id: stop, tools: stop, abort: true}
  - {id: ask, tools: ask, confirm: true}
  - {tools: unnamed, allow: false}
`,
    },
    callers: [
      {
        who: caller(),
        want: {
          read: ['allow', ['p#default']],
          write: ['allow', ['p#default']],
          send: ['require_approval', ['p#default']],
          wipe: ['deny', ['p#default']],
          ok: ['allow', ['ok']],
          no: ['deny', ['no']],
          stop: ['abort', ['stop']],
          ask: ['require_approval', ['ask']],
          always: ['require_approval', ['p#tools.always']],
          always_denied: ['deny', ['p#default']],
          unnamed: ['deny', ['p#4']],
        },
      },
    ],
  },
  {
    name: 'defaults per environment, and rules for one environment (envs)',
    env: 'prod',
    files: {
      'p.yaml': `
policy: p
environments: [dev, prod]
default: {dev: allow, prod: deny}
tools:
  read: {kind: read_only}
  wipe: {kind: destructive}
rules:
  - {id: no-wipe, tools: wipe, allow: false}
  - {id: end-in-prod, kinds: [destructive], envs: [prod], abort: true}
`,
    },
    callers: [{ who: caller(), want: { read: ['deny', ['p#default']], wipe: ['abort', ['end-in-prod']] } }],
  },
  {
    name: 'the same file in dev',
    env: 'dev',
    files: {
      'p.yaml': `
policy: p
environments: [dev, prod]
default: {dev: allow, prod: deny}
tools:
  read: {kind: read_only}
  wipe: {kind: destructive}
rules:
  - {id: no-wipe, tools: wipe, allow: false}
  - {id: end-in-prod, kinds: [destructive], envs: [prod], abort: true}
`,
    },
    callers: [{ who: caller(), want: { read: ['allow', ['p#default']], wipe: ['deny', ['no-wipe']] } }],
  },
  {
    name: 'conditions on the arguments, $context or $run: depends; on the caller and $env: decided for the caller',
    env: 'dev',
    files: {
      'p.yaml': `
policy: p
default: deny
tools:
  by_args: {kind: read_only}
  by_context: {kind: read_only}
  by_run: {kind: read_only}
  by_team: {kind: read_only}
  by_env: {kind: read_only}
  by_claim: {kind: read_only}
  confirm_args: {kind: read_only}
  by_agent: {kind: read_only}
rules:
  - {id: args, tools: by_args, allow: true, when: "amount < 10"}
  - {id: context, tools: by_context, allow: true, when: "$context.sandbox == true"}
  - {id: run, tools: by_run, allow: true, when: 'count($run.steps, "*") < 3'}
  - {id: team, tools: by_team, allow: true, when: '$caller.team == "support"'}
  - {id: env, tools: by_env, allow: true, when: '$env == "dev"'}
  - {id: claim, tools: by_claim, allow: true, when: '$caller.claims.tier == "gold"'}
  - {id: confirm-args, tools: confirm_args, allow: true, confirm: "amount > 100"}
  - {id: not-bots, tools: by_agent, allow: false, when: '$caller.agent == "bot"'}
  - {id: agents, tools: by_agent, allow: true}
`,
    },
    callers: [
      {
        who: caller({ team: 'support', claims: { tier: 'gold' }, agent: 'helper' }),
        want: {
          by_args: ['depends', ['args', 'p#default']],
          by_context: ['depends', ['context', 'p#default']],
          by_run: ['depends', ['run', 'p#default']],
          by_team: ['allow', ['team']],
          by_env: ['allow', ['env']],
          by_claim: ['allow', ['claim']],
          confirm_args: ['depends', ['confirm-args']],
          by_agent: ['allow', ['agents']],
        },
      },
      {
        // No team, claim or agent: those conditions are undecidable, so the allow rules do not
        // apply and the restricting one does (docs/spec.md section 3.5).
        who: caller(),
        want: {
          by_args: ['depends', ['args', 'p#default']],
          by_context: ['depends', ['context', 'p#default']],
          by_run: ['depends', ['run', 'p#default']],
          by_team: ['deny', ['p#default']],
          by_env: ['allow', ['env']],
          by_claim: ['deny', ['p#default']],
          confirm_args: ['depends', ['confirm-args']],
          by_agent: ['deny', ['not-bots']],
        },
      },
      { who: caller({ agent: 'bot' }), want: { by_agent: ['deny', ['not-bots']] } },
    ],
  },
  {
    name: 'guards: depends where a finding would make the answer more severe, for the callers they select',
    files: {
      'p.yaml': `
policy: p
default: allow
tools:
  note: {kind: read_only}
  secret: {kind: read_only}
  blocked: {kind: read_only}
  other: {kind: read_only}
rules:
  - {id: blocked, tools: blocked, allow: false}
guards:
  - {id: pii-ask, guard: pii, tools: [note], action: require_approval}
  - {id: pii-deny, guard: pii, tools: [secret, blocked]}
  - {id: pii-contractors, guard: pii, tools: [other], teams: [contractors]}
`,
    },
    callers: [
      {
        who: caller({ team: 'contractors' }),
        want: {
          note: ['depends', ['p#default', 'pii-ask']],
          secret: ['depends', ['p#default', 'pii-deny']],
          blocked: ['deny', ['blocked']],
          other: ['depends', ['p#default', 'pii-contractors']],
        },
      },
      { who: caller({ team: 'support' }), want: { other: ['allow', ['p#default']] } },
    ],
  },
  {
    name: 'limits.max_calls: the status is for a run below its limits',
    files: {
      'p.yaml': `
policy: p
default: allow
tools: {a: {kind: read_only}, stop: {kind: read_only}}
rules: [{id: stop, tools: stop, abort: true}]
limits: {max_calls: 3}
`,
    },
    callers: [{ who: caller(), want: { a: ['allow', ['p#default']], stop: ['abort', ['stop']] } }],
  },
  {
    name: 'limits.max_calls 0 ends every run',
    files: {
      'a.yaml': 'policy: a\ndefault: allow\ntools: {a: {kind: read_only}}\nlimits: {max_calls: 0}\n',
      'b.yaml':
        'policy: b\nscope: {tools: [b, c]}\ndefault: allow\ntools: {b: {kind: read_only}}\nlimits: {max_calls: 10001}\n',
      'c.yaml':
        'policy: c\nscope: {tools: [c]}\ndefault: allow\ntools: {c: {kind: read_only}}\nlimits: {max_calls: 10000}\n',
    },
    callers: [
      {
        who: caller(),
        want: {
          a: ['abort', ['a#limits.max_calls']],
          b: ['abort', ['a#limits.max_calls']],
          c: ['abort', ['a#limits.max_calls']],
        },
      },
    ],
  },
  {
    name: 'limits of any size leave the status alone',
    files: {
      'b.yaml': 'policy: b\ndefault: allow\ntools: {b: {kind: read_only}}\nlimits: {max_calls: 10001}\n',
      'c.yaml':
        'policy: c\nscope: {tools: [c]}\ndefault: allow\ntools: {c: {kind: read_only}}\nlimits: {max_calls: 10000}\n',
    },
    callers: [{ who: caller(), want: { b: ['allow', ['b#default']], c: ['allow', ['b#default']] } }],
  },
  {
    name: 'scope: a file answers only for the callers and tools it selects; none answering, the built-in default',
    files: {
      'a.yaml': `
policy: a
scope: {teams: [support]}
default: deny
tools: {refund: {kind: remote_mutation}, status: {kind: read_only}}
rules: [{id: refund-ok, tools: refund, allow: true}]
`,
      'b.yaml': 'policy: b\nscope: {tools: [status]}\ndefault: allow\n',
    },
    callers: [
      { who: caller({ team: 'support' }), want: { refund: ['allow', ['refund-ok']], status: ['deny', ['a#default']] } },
      {
        who: caller({ team: 'sales' }),
        want: { refund: ['require_approval', ['builtin#default']], status: ['allow', ['b#default']] },
      },
    ],
  },
  {
    name: 'teams, users and agents selectors: each caller its own answer',
    files: {
      'p.yaml': `
policy: p
default: deny
tools: {deploy: {kind: remote_mutation}, read: {kind: read_only}, refund: {kind: remote_mutation}}
rules:
  - {id: deployers, tools: deploy, users: [alice], allow: true}
  - {id: no-bots, agents: [bot], kinds: [read_only], allow: false}
  - {id: reads, tools: read, allow: true}
  - {id: support-refunds, tools: refund, teams: [support], allow: true}
`,
    },
    callers: [
      {
        who: caller({ user: 'alice', team: 'support' }),
        want: { deploy: ['allow', ['deployers']], read: ['allow', ['reads']], refund: ['allow', ['support-refunds']] },
      },
      {
        who: caller({ user: 'bob', agent: 'bot', team: 'sales' }),
        want: { deploy: ['deny', ['p#default']], read: ['deny', ['no-bots']], refund: ['deny', ['p#default']] },
      },
    ],
  },
  {
    name: 'several files: the most severe answer wins, a tool several catalogues describe is decided under all of them',
    files: {
      'a.yaml':
        'policy: a\ndefault: allow\ntools: {send_wire: {kind: remote_mutation}}\nrules: [{id: no-remote, kinds: [remote_mutation], allow: false}]\n',
      'b.yaml':
        'policy: b\ndefault: allow\ntools: {"send_*": {kind: destructive, tags: [money]}}\nrules: [{id: money-asks, tags: [money], confirm: true}]\n',
    },
    callers: [
      { who: caller(), want: { send_wire: ['deny', ['no-remote']], 'send_*': ['require_approval', ['money-asks']] } },
    ],
  },
  {
    name: 'globs: the names only the glob describes, classed by the selectors that match them',
    files: {
      'p.yaml': `
policy: p
default: deny
tools:
  "lookup_*": {kind: read_only}
  "github__*": {kind: remote_mutation, tags: [mcp]}
  github__delete_repo: {kind: destructive}
  "fs_*": {kind: local_mutation}
  "fs_admin_*": {kind: destructive}
  "-*": {kind: read_only}
  "bad name": {kind: read_only}
  "mcp__*": {kind: read_only}
rules:
  - {id: lookups, tools: ["lookup_*"], allow: true}
  - {id: no-secret-lookups, tools: "lookup_secret*", allow: false}
  - {id: mcp, tags: [mcp], allow: true}
  - {id: no-destructive, kinds: [destructive], abort: true}
  - {id: mcp-reads, tools: "mcp__*", allow: true}
guards:
  - {id: mail-pii, guard: pii, tools: ["mcp__mail_*"]}
`,
    },
    callers: [
      {
        who: caller(),
        want: {
          // lookup_secret… is denied, other lookups allowed: one status cannot speak for both.
          'lookup_*': ['depends', ['lookups', 'no-secret-lookups']],
          // github__delete_repo has its own entry, so it is not among the glob's names.
          'github__*': ['allow', ['mcp']],
          github__delete_repo: ['abort', ['no-destructive']],
          'fs_*': ['deny', ['p#default']],
          // An earlier glob of the same file describes every name it matches: no name is its own.
          'fs_admin_*': ['depends', []],
          // No request can name a tool starting with '-', nor one with a space (docs/spec.md section 5.1).
          '-*': ['depends', []],
          'bad name': ['deny', []],
          // A guard reads the arguments of some of its names.
          'mcp__*': ['depends', ['mcp-reads', 'mail-pii']],
        },
      },
    ],
  },
  {
    name: 'a glob and exact names of other files: each name is decided once, by its own entry',
    files: {
      'a.yaml': 'policy: a\ndefault: allow\ntools: {"tool_*": {kind: read_only}}\n',
      'b.yaml':
        'policy: b\ndefault: allow\ntools: {tool_wipe: {kind: destructive}}\nrules: [{id: no-wipe, kinds: [destructive], allow: false}]\n',
    },
    callers: [{ who: caller(), want: { 'tool_*': ['allow', ['a#default']], tool_wipe: ['deny', ['no-wipe']] } }],
  },
  {
    name: 'conservative where conditions may exclude each other: depends, never a status a call can contradict',
    files: {
      // Every call asks (amount < 5 asks by the rule, any other amount by the default), but the
      // inventory does not read what the two have in common: it says depends.
      'p.yaml': `
policy: p
default: side_effects
tools: {t: {kind: remote_mutation}, u: {kind: remote_mutation}}
rules:
  - {id: small, tools: t, allow: true, when: "amount < 5", confirm: true}
  - {id: big, tools: u, allow: false, when: "amount >= 5"}
  - {id: small-u, tools: u, allow: false, when: "amount < 5"}
`,
    },
    callers: [
      { who: caller(), want: { t: ['depends', ['small', 'p#default']], u: ['depends', ['p#default', 'big']] } },
    ],
  },
];

describe('inventory(): the status of each catalogue entry for a caller', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const set = setOf(c.files, c.env ?? null);
      for (const { who, want } of c.callers) {
        const got = statuses(set, who);
        for (const [name, expected] of Object.entries(want))
          expect(got[name], `${name} for ${JSON.stringify(who)}`).toEqual(expected);
      }
    });
  }
});

describe('inventory(): the strict call', () => {
  it('finds something for every guard on arguments, whatever it looks for; guards on other stages count for none', () => {
    const set = setOf({
      'p.yaml': `
policy: p
default: allow
tools: {a: {kind: read_only}, b: {kind: read_only}, c: {kind: read_only}, d: {kind: read_only}}
guards:
  - {id: ticket, guard: pattern, tools: [a], patterns: [{name: ticket, regex: "TCK-[0-9]{6}"}]}
  - {id: keys, guard: secrets, tools: [b]}
  - {id: out, guard: pii, tools: [c], on: [result]}
  - {id: model, guard: pii, on: [llm_request]}
`,
    });
    const got = statuses(set, caller());
    expect(got.a).toEqual(['depends', ['p#default', 'ticket']]);
    expect(got.b).toEqual(['depends', ['p#default', 'keys']]);
    expect(got.c).toEqual(['allow', ['p#default']]);
    expect(got.d).toEqual(['allow', ['p#default']]);
  });
});

describe('inventory(): the shape', () => {
  const set = setOf(
    {
      'b.yaml': 'policy: b\ntools: {z: {kind: read_only}, "y_*": {kind: remote_mutation, tags: [mcp, ops]}}\n',
      'a.yaml': 'policy: a\nversion: "2"\ntools: {x: {kind: destructive}}\n',
    },
    'prod',
  );

  it('one item per catalogue entry, in load order (files by name, entries as written), with the environment', () => {
    expect(inventory(set, caller())).toEqual({
      env: 'prod',
      tools: [
        { name: 'x', policy: 'a', kind: 'destructive', tags: [], status: 'deny', rules: ['a#default'] },
        { name: 'z', policy: 'b', kind: 'read_only', tags: [], status: 'allow', rules: ['a#default'] },
        {
          name: 'y_*',
          policy: 'b',
          kind: 'remote_mutation',
          tags: ['mcp', 'ops'],
          status: 'require_approval',
          rules: ['a#default'],
        },
      ],
    });
  });

  it('no policy file: no catalogue, no tools', () => {
    expect(inventory(setOf({}), caller())).toEqual({ env: null, tools: [] });
  });

  it('is a pure function of the set and the caller: the same answer twice, and a new set is read afresh', () => {
    const first = inventory(set, caller());
    expect(inventory(set, caller())).toEqual(first);
    const reloaded = setOf({ 'a.yaml': 'policy: a\ndefault: allow\ntools: {x: {kind: destructive}}\n' }, 'prod');
    expect(inventory(reloaded, caller()).tools).toEqual([
      { name: 'x', policy: 'a', kind: 'destructive', tags: [], status: 'allow', rules: ['a#default'] },
    ]);
    expect(inventory(set, caller())).toEqual(first);
  });

  it('shows rule ids only: no condition, reason, threshold or selector of any rule', () => {
    const secretive = setOf({
      'p.yaml': `
policy: p
default: deny
tools: {refund: {kind: remote_mutation}}
rules:
  - {id: vip, tools: refund, users: [vip-user-7], allow: true, reason: "vip refunds under 9999"}
  - {id: cap, tools: refund, teams: [support], allow: true, confirm: "amount > 4242", reason: "over 4242 needs an operator"}
`,
    });
    for (const who of [caller({ user: 'vip-user-7' }), caller({ team: 'support' }), caller()]) {
      const text = JSON.stringify(inventory(secretive, who));
      for (const hidden of ['vip-user-7', '9999', '4242', 'amount', 'support', 'operator'])
        expect(text).not.toContain(hidden);
    }
  });
});
