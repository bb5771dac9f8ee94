// One test per load-time refusal of docs/spec.md section 2: each names file, line, column and key, and
// never echoes the offending value.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/json/value.js';
import { decide } from '../../src/policy/decide.js';
import { PolicyLoadError, type LoadProblem } from '../../src/policy/errors.js';
import { buildPolicySet, loadPolicies } from '../../src/policy/load.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

function problemsOf(files: Record<string, string>, env: string | null = null): LoadProblem[] {
  try {
    buildPolicySet(
      Object.entries(files).map(([path, text]) => ({ path, bytes: enc(text) })),
      { env },
    );
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyLoadError);
    return [...(err as PolicyLoadError).problems];
  }
  throw new Error('expected the load to fail');
}

function onlyProblem(files: Record<string, string>, env: string | null = null): LoadProblem {
  const problems = problemsOf(files, env);
  expect(problems, JSON.stringify(problems)).toHaveLength(1);
  return problems[0]!;
}

describe('loading refuses, naming file, line, column and key', () => {
  const cases: { name: string; text: string; env?: string; want: Partial<LoadProblem>; match: RegExp }[] = [
    {
      name: 'an unknown top-level key',
      text: 'policy: p\nrulez: []\n',
      want: { line: 2, column: 1, key: 'rulez' },
      match: /unknown key/,
    },
    {
      name: 'an unknown key in a rule',
      text: 'policy: p\nrules:\n  - tools: [a]\n    efect: allow\n    allow: true\n',
      want: { line: 4, column: 5, key: 'rules.0.efect' },
      match: /unknown key/,
    },
    {
      name: 'an unknown key in a catalogue entry',
      text: 'policy: p\ntools:\n  a: {kind: read_only, sceme: {}}\n',
      want: { line: 3, column: 24, key: 'tools.a.sceme' },
      match: /unknown key/,
    },
    {
      name: 'an unknown key in an approval shape',
      text: 'policy: p\nrules:\n  - tools: [a]\n    allow: true\n    approval: {kind: k, shown: [x]}\n',
      want: { line: 5, column: 25, key: 'rules.0.approval.shown' },
      match: /unknown key/,
    },
    {
      name: 'a wrong type',
      text: 'policy: p\nversion: 3\n',
      want: { line: 2, column: 10, key: 'version' },
      match: /must be string/,
    },
    {
      name: 'a YAML 1.1 boolean where a boolean is expected',
      text: 'policy: p\nrules:\n  - tools: [a]\n    allow: yes\n',
      want: { line: 4, column: 12, key: 'rules.0.allow' },
      match: /must be boolean/,
    },
    {
      name: 'an empty tools list',
      text: 'policy: p\nrules:\n  - tools: []\n    allow: true\n',
      want: { line: 3, column: 12, key: 'rules.0.tools' },
      match: /must not be empty/,
    },
    {
      name: 'an unclosed glob class',
      text: 'policy: p\nrules:\n  - tools: ["look[up"]\n    allow: true\n',
      want: { line: 3, column: 13, key: 'rules.0.tools.0' },
      match: /glob does not compile/,
    },
    {
      name: 'a brace glob',
      text: 'policy: p\nrules:\n  - tools: ["{a,b}"]\n    allow: true\n',
      want: { key: 'rules.0.tools.0' },
      match: /glob does not compile/,
    },
    {
      name: 'a ** glob in the catalogue',
      text: 'policy: p\ntools:\n  "a/**": {kind: read_only}\n',
      want: { line: 3, column: 3, key: 'tools.a/**' },
      match: /glob does not compile/,
    },
    // No request may name a tool with a `.` or `..` path segment: such an entry or selector is dead.
    {
      name: 'a catalogue name with a .. path segment',
      text: 'policy: p\ntools:\n  "lookup_/../wipe_orders": {kind: read_only}\n',
      want: { line: 3, column: 3, key: 'tools.lookup_/../wipe_orders' },
      match: /cannot have a "\." or "\.\." path segment/,
    },
    {
      name: 'a catalogue glob ending in a .. segment',
      text: 'policy: p\ntools:\n  "files/*/..": {kind: read_only}\n',
      want: { line: 3, column: 3, key: 'tools.files/*/..' },
      match: /path segment/,
    },
    {
      name: 'a rule glob with a . path segment',
      text: 'policy: p\nrules:\n  - tools: ["a/./*"]\n    allow: true\n',
      want: { line: 3, column: 13, key: 'rules.0.tools.0' },
      match: /cannot have a "\." or "\.\." path segment: requests naming one are refused/,
    },
    {
      name: 'a guard selecting a tool with a .. segment',
      text: 'policy: p\nguards:\n  - guard: pii\n    tools: [safe, "x/.."]\n',
      want: { line: 4, column: 19, key: 'guards.0.tools.1' },
      match: /path segment/,
    },
    {
      name: 'an environment not declared',
      text: 'policy: p\nenvironments: [dev]\nrules:\n  - tools: [a]\n    envs: [prod]\n    allow: true\n',
      env: 'dev',
      want: { line: 5, column: 12, key: 'rules.0.envs.0' },
      match: /not declared/,
    },
    {
      name: 'a default for an undeclared environment',
      text: 'policy: p\nenvironments: [dev]\ndefault: {dev: allow, prod: deny}\n',
      env: 'dev',
      want: { line: 3, column: 23, key: 'default.prod' },
      match: /not declared/,
    },
    {
      name: 'POLICY_ENV missing when environments are declared',
      text: 'policy: p\nenvironments: [dev, prod]\n',
      want: { line: 2, column: 15, key: 'environments' },
      match: /set POLICY_ENV/,
    },
    {
      name: 'POLICY_ENV not among the environments',
      text: 'policy: p\nenvironments: [dev, prod]\n',
      env: 'staging',
      want: { line: 2, column: 15, key: 'environments' },
      match: /not among the declared/,
    },
    {
      name: 'a YAML anchor and alias',
      text: 'policy: p\ntools:\n  a: &base {kind: read_only}\n  b: *base\n',
      want: { line: 3, column: 12, key: 'tools.a' },
      match: /anchors are not allowed/,
    },
    {
      name: 'a YAML custom tag',
      text: 'policy: p\nversion: !ver "3"\n',
      want: { line: 2, key: 'version' },
      match: /tags are not allowed/,
    },
    {
      name: 'a condition that does not parse',
      text: 'policy: p\nrules:\n  - tools: [a]\n    when: "amount >> 1"\n    allow: false\n',
      want: { line: 4, column: 11, key: 'rules.0.when' },
      match: /condition/,
    },
    {
      name: 'a condition naming a secret-like argument',
      text: 'policy: p\nrules:\n  - tools: [a]\n    when: "api_key == \'x\'"\n    allow: false\n',
      want: { line: 4, column: 11, key: 'rules.0.when' },
      match: /secret/,
    },
    {
      name: 'confirm: false on a rule',
      text: 'policy: p\nrules:\n  - tools: [a]\n    allow: true\n    confirm: false\n',
      want: { line: 5, column: 14, key: 'rules.0.confirm' },
      match: /confirm: false/,
    },
    {
      name: 'confirm: false in the catalogue',
      text: 'policy: p\ntools:\n  a: {kind: read_only, confirm: false}\n',
      want: { line: 3, column: 33, key: 'tools.a.confirm' },
      match: /confirm: false/,
    },
    {
      name: 'an unknown guard',
      text: 'policy: p\nguards:\n  - guard: virus\n    tools: [a]\n',
      want: { line: 3, column: 12, key: 'guards.0.guard' },
      match: /unknown guard/,
    },
    {
      name: 'a schema that does not compile',
      text: 'policy: p\ntools:\n  a:\n    kind: read_only\n    schema: {type: object, requird: [x]}\n',
      want: { line: 5, column: 13, key: 'tools.a.schema' },
      match: /schema does not compile/,
    },
    {
      name: 'a rule with no effect',
      text: 'policy: p\nrules:\n  - tools: [a]\n',
      want: { line: 3, column: 5, key: 'rules.0' },
      match: /needs `allow: true`/,
    },
    {
      name: 'an identity with a control character',
      text: 'policy: "p\\u0007"\n',
      want: { line: 1, column: 9, key: 'policy' },
      match: /control characters/,
    },
    {
      name: 'a schema number a double cannot hold exactly',
      text: 'policy: p\ntools:\n  a:\n    kind: read_only\n    schema: {properties: {id: {enum: [1, 1234567890123456789]}}}\n',
      want: { line: 5, key: 'tools.a.schema.properties.id.enum.1' },
      match: /a number a double cannot hold exactly/,
    },
    {
      name: 'a schema number a double cannot hold, written the YAML way (a plus sign)',
      text: 'policy: p\ntools:\n  a:\n    kind: read_only\n    schema: {properties: {id: {const: +1234567890123456789}}}\n',
      want: { line: 5, key: 'tools.a.schema.properties.id.const' },
      match: /a number a double cannot hold exactly/,
    },
    {
      name: 'a schema number a double cannot hold, in hexadecimal',
      text: 'policy: p\ntools:\n  a:\n    kind: read_only\n    schema: {properties: {id: {const: 0x112210f47de98115}}}\n',
      want: { line: 5, key: 'tools.a.schema.properties.id.const' },
      match: /a number a double cannot hold exactly/,
    },
    {
      name: 'a rule id that Gatehouse writes itself',
      text: 'policy: p\nrules:\n  - {id: "q#default", tools: [a], allow: false}\n',
      want: { line: 3, key: 'rules.0.id' },
      match: /an id cannot contain "#" or be "internal"/,
    },
    {
      name: 'a guard id "internal"',
      text: 'policy: p\nguards:\n  - {id: internal, guard: pii}\n',
      want: { line: 3, key: 'guards.0.id' },
      match: /an id cannot contain "#" or be "internal"/,
    },
    {
      name: 'an identity over 256 bytes',
      text: `policy: "${'é'.repeat(129)}"\n`,
      want: { key: 'policy' },
      match: /1 to 256 bytes/,
    },
    {
      name: 'a duplicate YAML key',
      text: 'policy: p\npolicy: q\n',
      want: { line: 2, column: 1, key: 'policy' },
      match: /duplicate key/,
    },
    {
      name: 'a duplicate YAML key deeper down, with its key path',
      text: 'policy: p\nrules:\n  - tools: [a]\n    allow: true\n    allow: false\n',
      want: { line: 5, column: 5, key: 'rules.0.allow' },
      match: /duplicate key/,
    },
    {
      name: 'a YAML number key that a quoted key of the same text would silently replace',
      text: 'policy: p\ntools:\n  2024: {kind: destructive}\n  "2024": {kind: read_only}\n',
      want: { line: 3, column: 3, key: 'tools.2024' },
      match: /a key must be a string: quote it/,
    },
    {
      name: 'a YAML hexadecimal key, named as written',
      text: 'policy: p\ntools:\n  0x1F: {kind: destructive}\n',
      want: { line: 3, column: 3, key: 'tools.0x1F' },
      match: /a key must be a string/,
    },
    {
      name: 'YAML boolean and null keys',
      text: 'policy: p\ntools:\n  true: {kind: read_only}\n',
      want: { key: 'tools.true' },
      match: /a key must be a string/,
    },
    {
      name: 'a YAML null key',
      text: 'policy: p\ntools:\n  ~: {kind: read_only}\n',
      want: { line: 3 },
      match: /a key must be a string/,
    },
    {
      name: 'a YAML sequence as a key',
      text: 'policy: p\ntools:\n  ? [a, b]\n  : {kind: read_only}\n',
      want: { line: 3, key: 'tools' },
      match: /a key must be a string/,
    },
    {
      name: 'a YAML number key inside a tool schema',
      text: 'policy: p\ntools:\n  a:\n    kind: read_only\n    schema: {type: object, properties: {1: {type: string}}}\n',
      want: { line: 5, key: 'tools.a.schema.properties.1' },
      match: /a key must be a string/,
    },
    {
      name: 'two YAML documents',
      text: 'policy: p\n---\npolicy: q\n',
      want: {},
      match: /exactly one YAML document/,
    },
    {
      name: 'a stage that is none of the four',
      text: 'policy: p\nguards:\n  - guard: pii\n    on: [args, results]\n',
      want: { line: 4, column: 16, key: 'guards.0.on.1' },
      match: /^must be one of: args, result, llm_request, llm_response$/,
    },
    {
      name: 'a stage that is none of the four, written as one string',
      text: 'policy: p\nguards:\n  - guard: pii\n    on: results\n',
      want: { line: 4, column: 9, key: 'guards.0.on' },
      match: /must be one of: args, result/,
    },
    {
      name: 'a guard on a model stage that selects tools',
      text: 'policy: p\nguards:\n  - guard: pii\n    on: [result, llm_response]\n    tools: [send_*]\n',
      want: { line: 5, column: 12, key: 'guards.0.tools' },
      match: /^a guard on llm_response reads the model's text, which belongs to no tool: it cannot select tools/,
    },
    {
      name: 'a guard on a model stage that selects kinds',
      text: 'policy: p\nguards:\n  - guard: secrets\n    on: llm_request\n    kinds: [read_only]\n',
      want: { line: 5, column: 12, key: 'guards.0.kinds' },
      match: /cannot select kinds/,
    },
    {
      name: 'a guard on a model stage that selects tags',
      text: 'policy: p\nguards:\n  - guard: secrets\n    on: [llm_request]\n    tags: [mail]\n',
      want: { line: 5, column: 11, key: 'guards.0.tags' },
      match: /cannot select tags/,
    },
    {
      name: 'a guard on a model stage in a file scoped to some tools',
      text: 'policy: p\nscope: {tools: [a]}\nguards:\n  - guard: pii\n    on: [llm_request]\n',
      want: { line: 5, column: 9, key: 'guards.0.on' },
      match: /could never run/,
    },
    {
      name: 'require_approval on a model stage',
      text: 'policy: p\nguards:\n  - guard: pii\n    on: [llm_response]\n    action: require_approval\n',
      want: { line: 5, column: 13, key: 'guards.0.action' },
      match: /cannot wait for a person/,
    },
    {
      name: 'redact on the arguments',
      text: 'policy: p\nguards:\n  - guard: pii\n    on: [args, result]\n    action: redact\n',
      want: { line: 5, column: 13, key: 'guards.0.action' },
      match: /^`redact` cannot go with `on: args`: a call cannot be partly run/,
    },
    {
      name: 'redact with the default stage (args)',
      text: 'policy: p\nguards:\n  - guard: pii\n    action: redact\n',
      want: { line: 4, column: 13, key: 'guards.0.action' },
      match: /cannot go with `on: args`/,
    },
    {
      name: 'a stage listed twice',
      text: 'policy: p\nguards:\n  - guard: pii\n    on: [result, result]\n',
      want: { line: 4, column: 9, key: 'guards.0.on' },
      match: /listed twice/,
    },
    {
      name: 'a pattern that is not RE2 (a backreference)',
      text: 'policy: p\nguards:\n  - guard: pattern\n    on: result\n    patterns:\n      - {name: twice, regex: "(a)\\\\1"}\n',
      want: { line: 6, column: 30, key: 'guards.0.patterns.0.regex' },
      match: /^not an RE2 regular expression: .*invalid escape sequence/,
    },
    {
      name: 'a pattern with lookahead',
      text: 'policy: p\nguards:\n  - guard: pattern\n    patterns:\n      - {name: ok, regex: "x+"}\n      - {name: ahead, regex: "a(?=b)"}\n',
      want: { line: 6, column: 30, key: 'guards.0.patterns.1.regex' },
      match: /^not an RE2 regular expression/,
    },
    {
      name: 'a pattern that does not compile',
      text: 'policy: p\nguards:\n  - guard: pattern\n    patterns: [{name: t, regex: "[z-a]"}]\n',
      want: { line: 4, column: 33, key: 'guards.0.patterns.0.regex' },
      match: /invalid character class range/,
    },
    {
      name: 'a pattern that can match an empty text',
      text: 'policy: p\nguards:\n  - guard: pattern\n    patterns: [{name: t, regex: "x*"}]\n',
      want: { line: 4, column: 33, key: 'guards.0.patterns.0.regex' },
      match: /can match an empty text/,
    },
    {
      name: 'a pattern guard without patterns',
      text: 'policy: p\nguards:\n  - guard: pattern\n',
      want: { line: 3, column: 5, key: 'guards.0' },
      match: /needs `patterns`/,
    },
    {
      name: 'patterns on another guard',
      text: 'policy: p\nguards:\n  - guard: pii\n    patterns: [{name: t, regex: "x"}]\n',
      want: { line: 4, column: 15, key: 'guards.0.patterns' },
      match: /only a `pattern` guard has `patterns`/,
    },
    {
      name: 'a result schema that does not compile',
      text: 'policy: p\ntools:\n  t:\n    kind: read_only\n    result_schema: {type: nothing}\n',
      want: { line: 5, column: 20, key: 'tools.t.result_schema' },
      match: /^schema does not compile/,
    },
    {
      name: 'an empty `on`',
      text: 'policy: p\nguards:\n  - guard: pii\n    on: []\n',
      want: { line: 4, column: 9, key: 'guards.0.on' },
      match: /must not be empty/,
    },
    {
      name: 'a selector that is neither a string nor a list',
      text: 'policy: p\nrules:\n  - tools: 5\n    allow: true\n',
      want: { line: 3, column: 12, key: 'rules.0.tools' },
      match: /^must be a string or a list of strings$/,
    },
    {
      name: 'an empty string where a list may be one string',
      text: 'policy: p\nrules:\n  - teams: ""\n    allow: true\n',
      want: { line: 3, column: 12, key: 'rules.0.teams' },
      match: /must NOT have fewer than 1 characters/,
    },
    {
      name: 'a glob that does not compile, written as one string',
      text: 'policy: p\nrules:\n  - tools: "look[up"\n    allow: true\n',
      want: { line: 3, column: 12, key: 'rules.0.tools' },
      match: /glob does not compile/,
    },
    {
      name: 'a scope with no selector',
      text: 'policy: p\nscope: {}\n',
      want: { line: 2, column: 8, key: 'scope' },
      match: /^a scope needs at least one selector$/,
    },
    {
      name: 'an unknown key in a scope',
      text: 'policy: p\nscope:\n  tools: [a]\n  when: "x > 1"\n',
      want: { line: 4, column: 3, key: 'scope.when' },
      match: /unknown key/,
    },
    {
      name: 'an empty selector list in a scope',
      text: 'policy: p\nscope:\n  teams: []\n',
      want: { line: 3, column: 10, key: 'scope.teams' },
      match: /must not be empty/,
    },
    {
      name: 'a scope naming an undeclared environment',
      text: 'policy: p\nenvironments: [dev]\nscope: {envs: prod}\n',
      env: 'dev',
      want: { line: 3, column: 15, key: 'scope.envs' },
      match: /not declared in environments/,
    },
    {
      name: 'a scope glob with a dot segment',
      text: 'policy: p\nscope:\n  tools: ["a/../b"]\n',
      want: { line: 3, column: 11, key: 'scope.tools.0' },
      match: /path segment/,
    },
    {
      name: 'a confirm-only rule with confirm: false',
      text: 'policy: p\nrules:\n  - tools: [a]\n    confirm: false\n',
      want: { line: 4, column: 14, key: 'rules.0.confirm' },
      match: /confirm: false/,
    },
    {
      name: 'confirm on a deny rule',
      text: 'policy: p\nrules:\n  - tools: [a]\n    allow: false\n    confirm: true\n',
      want: { line: 5, column: 14, key: 'rules.0.confirm' },
      match: /cannot go with `allow: false` or `abort`/,
    },
    {
      name: 'an approval shape on an abort rule',
      text: 'policy: p\nrules:\n  - tools: [a]\n    abort: true\n    approval: {kind: k}\n',
      want: { line: 5, column: 15, key: 'rules.0.approval' },
      match: /cannot go with `allow: false` or `abort`/,
    },
    {
      name: 'an approval shape with neither an effect nor confirm',
      text: 'policy: p\nrules:\n  - tools: [a]\n    approval: {kind: k}\n',
      want: { line: 3, column: 5, key: 'rules.0' },
      match: /needs `allow: true`, `allow: false`, `abort: true` or `confirm`/,
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const problems = problemsOf({ 'p.yaml': c.text }, c.env ?? null);
      const p = problems[0]!;
      expect(p.file).toBe('p.yaml');
      expect(p).toMatchObject(c.want);
      expect(p.message).toMatch(c.match);
    });
  }

  it('refuses YAML merge keys', () => {
    const problems = problemsOf({ 'p.yaml': 'policy: p\ntools:\n  a:\n    <<: {kind: read_only}\n' });
    expect(problems.some((p) => /merge keys/.test(p.message) && p.line === 4 && p.key === 'tools.a.<<')).toBe(true);
    const inList = problemsOf({
      'p.yaml': 'policy: p\nrules:\n  - tools: [a]\n    allow: true\n  - tools: [*x]\n    allow: true\n',
    });
    expect(inList.find((p) => /alias/.test(p.message))).toMatchObject({ line: 5, key: 'rules.1.tools.0' });
    expect(({} as Record<string, unknown>).kind).toBeUndefined();
  });

  it('refuses nesting deeper than 32', () => {
    const deep = `${'{"a":'.repeat(40)}1${'}'.repeat(40)}`;
    const p = onlyProblem({ 'p.json': `{"policy":"p","tools":{"t":{"kind":"read_only","schema":${deep}}}}` });
    expect(p.message).toMatch(/nesting deeper than 32/);
    expect(p.line).toBe(1);
  });

  it('refuses two files with the same policy name, even with different versions, where the later one writes it', () => {
    const p = onlyProblem({ 'a.yaml': 'policy: same\n', 'b.yaml': 'version: "2"\npolicy: same\n' });
    expect(p).toMatchObject({ file: 'b.yaml', key: 'policy', line: 2, column: 9 });
    expect(p.message).toBe('this policy name is also used by a.yaml');
  });

  it('refuses the same tool in two catalogues, and one rule id in two files, at the place in the later file', () => {
    const tool = onlyProblem({
      'a.yaml': 'policy: a\ntools: {t: {kind: read_only}}\n',
      'b.yaml': 'policy: b\ntools:\n  u: {kind: read_only}\n  t: {kind: destructive}\n',
    });
    expect(tool).toMatchObject({
      file: 'b.yaml',
      key: 'tools.t',
      line: 4,
      message: 'this tool is also in the catalogue of a.yaml',
    });
    const rule = onlyProblem({
      'a.yaml': 'policy: a\nrules:\n  - {id: shared, tools: [x], allow: true}\n',
      'b.yaml': 'policy: b\nrules:\n  - {tools: [y], allow: true}\n  - id: shared\n    tools: [z]\n    allow: true\n',
    });
    expect(rule).toMatchObject({
      file: 'b.yaml',
      key: 'rules.1.id',
      line: 4,
      message: 'this rule id is also used in a.yaml',
    });
  });

  it('reports every problem of every file, sorted', () => {
    const problems = problemsOf({
      'b.yaml': 'policy: b\nbogus: 1\n',
      'a.yaml': 'policy: a\nrules:\n  - tools: []\n    allow: true\n  - tools: [x]\n    allow: 1\n',
    });
    expect(problems.map((p) => `${p.file}:${p.line}`)).toEqual(['a.yaml:3', 'a.yaml:6', 'b.yaml:2']);
  });

  it('locates problems in JSON files', () => {
    const p = onlyProblem({
      'p.json': '{\n  "policy": "p",\n  "rules": [\n    {"tools": ["a"], "allow": true, "confirm": false}\n  ]\n}\n',
    });
    expect(p).toMatchObject({ line: 4, key: 'rules.0.confirm' });
  });

  it('locates problems in TOML files', () => {
    const p = onlyProblem({
      'p.toml':
        'policy = "p"\n\n[[rules]]\ntools = ["a"]\nallow = true\n\n[[rules]]\ntools = ["b"]\nallow = true\nconfirm = false\n',
    });
    expect(p).toMatchObject({ line: 10, column: 1, key: 'rules.1.confirm' });
  });

  it('locates a key of a TOML sub-table under an array of tables', () => {
    const p = onlyProblem({
      'p.toml':
        'policy = "p"\n\n[[rules]]\ntools = ["a"]\nallow = true\n\n[[rules]]\ntools = ["b"]\nallow = true\n\n[rules.approval]\nkinds = "x"\n',
    });
    expect(p).toMatchObject({ line: 12, column: 1, key: 'rules.1.approval.kinds' });
  });

  it('locates an unknown TOML table of tables at its header, not at 1:1', () => {
    const p = onlyProblem({
      'p.toml': 'policy = "p"\ndefault = "deny"\n\n[[budgetz]]\nmax_usd = 20\nscope = "user"\n',
    });
    expect(p).toMatchObject({ line: 4, column: 1, key: 'budgetz', message: 'unknown key' });
    const table = onlyProblem({ 'p.toml': 'policy = "p"\n\n[limitz]\nmax_calls = 3\n' });
    expect(table).toMatchObject({ line: 3, column: 1, key: 'limitz' });
    const nested = onlyProblem({ 'p.toml': 'policy = "p"\n\n[toolz.refund]\nkind = "remote_mutation"\n' });
    expect(nested).toMatchObject({ line: 3, column: 1, key: 'toolz' });
  });

  it('reports a JSON syntax error with line and column', () => {
    const p = onlyProblem({ 'p.json': '{\n  "policy": "p",\n  "policy": "q"\n}' });
    expect(p).toMatchObject({ line: 3 });
    expect(p.message).toMatch(/duplicate/);
  });

  it('refuses a file that is not UTF-8', () => {
    const problems = (() => {
      try {
        buildPolicySet([{ path: 'p.yaml', bytes: new Uint8Array([0x70, 0x3a, 0x20, 0xc3, 0x28]) }]);
      } catch (err) {
        return (err as PolicyLoadError).problems;
      }
      return [];
    })();
    expect(problems[0]?.message).toMatch(/not valid UTF-8/);
  });

  it('never echoes an offending value', () => {
    const secret = 'SECRET-VALUE-8d1f';
    const problems = problemsOf(
      {
        'p.yaml': `policy: p\nversion: 42\nenvironments: [dev]\ndefault: {dev: "${secret}"}\nrules:\n  - tools: ["${secret}["]\n    when: "x == ${secret}"\n    allow: "${secret}"\n`,
      },
      'dev',
    );
    expect(problems.length).toBeGreaterThan(0);
    for (const p of problems) expect(p.message).not.toContain(secret);
  });

  it('never echoes a name that is the problem: an undeclared environment, a rule id used twice', () => {
    const secret = 'SECRET-NAME-5c2e';
    const problems = problemsOf(
      {
        'p.yaml': `policy: p\nenvironments: [dev]\nrules:\n  - {id: ${secret}, tools: [a], envs: [${secret}x], allow: true}\n  - {id: ${secret}, tools: [b], allow: true}\n`,
      },
      'dev',
    );
    expect(problems.map((p) => p.message).sort()).toEqual([
      'this environment is not declared in environments',
      'this rule id is used twice in this file',
    ]);
    expect(problems.map((p) => p.key).sort()).toEqual(['rules.0.envs.0', 'rules.1.id']);
  });
});

describe('loading succeeds', () => {
  it('tool names and globs with dots that are not a whole path segment', () => {
    const set = buildPolicySet([
      {
        path: 'p.yaml',
        bytes: enc(
          'policy: p\ntools:\n  github.get_issue: {kind: read_only}\n  "v1.2/*": {kind: read_only}\n  "a/.b": {kind: read_only}\nrules:\n  - tools: ["*.get_*", "a/...", "x..y"]\n    allow: true\n',
        ),
      },
    ]);
    expect(set.files[0]!.tools.map((t) => t.pattern)).toEqual(['github.get_issue', 'v1.2/*', 'a/.b']);
  });

  it('gives each file its identity and digest, the same for YAML, JSON and TOML', () => {
    const yaml = buildPolicySet([
      { path: 'p.yaml', bytes: enc('policy: p\nversion: "1"\nrules:\n  - tools: [a]\n    allow: true\n') },
    ]);
    const json = buildPolicySet([
      { path: 'p.json', bytes: enc('{"policy":"p","version":"1","rules":[{"tools":["a"],"allow":true}]}') },
    ]);
    const toml = buildPolicySet([
      { path: 'p.toml', bytes: enc('policy = "p"\nversion = "1"\n[[rules]]\ntools = ["a"]\nallow = true\n') },
    ]);
    expect(yaml.identities[0]).toEqual({
      policy: 'p',
      version: '1',
      digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    expect(json.identities).toEqual(yaml.identities);
    expect(toml.identities).toEqual(yaml.identities);
  });

  it('accepts YAML spellings of exact numbers (+1.50, .5, 0x1F, 0o17)', () => {
    const set = buildPolicySet([
      {
        path: 'p.yaml',
        bytes: enc(
          'policy: p\ntools:\n  a: {kind: read_only, schema: {type: number, enum: [+1.50, .5, 0x1F, 0o17, 1.]}}\n',
        ),
      },
    ]);
    expect(set.files).toHaveLength(1);
  });

  it('hashes numbers in their shortest form, so YAML, JSON and TOML give one digest (TOML keeps no number text)', () => {
    const yaml = buildPolicySet([
      {
        path: 'p.yaml',
        bytes: enc(
          'policy: p\ntools:\n  a: {kind: read_only, schema: {type: number, maximum: 100.50, minimum: 1e2}}\n',
        ),
      },
    ]);
    const json = buildPolicySet([
      {
        path: 'p.json',
        bytes: enc(
          '{"policy":"p","tools":{"a":{"kind":"read_only","schema":{"type":"number","maximum":100.50,"minimum":1e2}}}}',
        ),
      },
    ]);
    const plain = buildPolicySet([
      {
        path: 'p.json',
        bytes: enc(
          '{"policy":"p","tools":{"a":{"kind":"read_only","schema":{"type":"number","maximum":100.5,"minimum":100}}}}',
        ),
      },
    ]);
    const toml = buildPolicySet([
      {
        path: 'p.toml',
        bytes: enc(
          'policy = "p"\n[tools.a]\nkind = "read_only"\nschema = {type = "number", maximum = 100.50, minimum = 1e2}\n',
        ),
      },
    ]);
    expect(json.identities).toEqual(yaml.identities);
    expect(plain.identities).toEqual(yaml.identities);
    expect(toml.identities).toEqual(yaml.identities);
  });

  it('loads files in file-name order whatever order they are given in', () => {
    const set = buildPolicySet([
      { path: 'dir/b.yaml', bytes: enc('policy: b\n') },
      { path: 'dir/a.yaml', bytes: enc('policy: a\n') },
    ]);
    expect(set.identities.map((i) => i.policy)).toEqual(['a', 'b']);
  });

  it('skips only *.test.yaml / *.test.yml (policy tests) and dotfiles: a *.test.json or *.test.toml is a policy', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-load-names-'));
    try {
      await writeFile(join(dir, 'a.yaml'), 'policy: a\ndefault: allow\n');
      await writeFile(
        join(dir, 'z.test.json'),
        '{"policy": "z", "default": "allow", "rules": [{"id": "no-t", "tools": ["t"], "allow": false, "reason": "not t"}]}',
      );
      await writeFile(
        join(dir, 'y.test.toml'),
        'policy = "y"\ndefault = "allow"\n[[rules]]\nid = "stop-u"\ntools = ["u"]\nabort = true\n',
      );
      await writeFile(join(dir, 'a.test.yaml'), 'cases: []\n');
      await writeFile(join(dir, 'b.test.YML'), 'cases: []\n');
      await writeFile(join(dir, '.hidden.yaml'), 'policy: hidden\n');
      const set = await loadPolicies(dir);
      expect(set.files.map((f) => f.identity.policy)).toEqual(['a', 'y', 'z']);
      const who = { user: 'u1', team: null, agent: null, roles: [] };
      expect(decide(set, { tool: 't', args: {} }, who)).toMatchObject({ decision: 'deny', rule: 'no-t' });
      expect(decide(set, { tool: 'u', args: {} }, who)).toMatchObject({ decision: 'abort', rule: 'stop-u' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a single string is accepted wherever a list of strings is, and means that list', () => {
    const who = { user: 'u1', team: 'support', agent: 'bot', roles: [] };
    const scalar = buildPolicySet(
      [
        {
          path: 'p.yaml',
          bytes: enc(
            'policy: p\nenvironments: dev\ndefault: deny\nscope: {tools: "r*", teams: support}\ntools:\n  refund: {kind: remote_mutation, tags: money}\n' +
              'rules:\n  - {tools: refund, kinds: remote_mutation, tags: money, envs: dev, teams: support, users: u1, agents: bot, allow: true, confirm: "amount > 100", approval: {capability: amount, presentation: amount}}\n' +
              'guards:\n  - {guard: pii, tools: refund, on: args}\n',
          ),
        },
      ],
      { env: 'dev' },
    );
    const listed = buildPolicySet(
      [
        {
          path: 'p.yaml',
          bytes: enc(
            'policy: p\nenvironments: [dev]\ndefault: deny\nscope: {tools: ["r*"], teams: [support]}\ntools:\n  refund: {kind: remote_mutation, tags: [money]}\n' +
              'rules:\n  - {tools: [refund], kinds: [remote_mutation], tags: [money], envs: [dev], teams: [support], users: [u1], agents: [bot], allow: true, confirm: "amount > 100", approval: {capability: [amount], presentation: [amount]}}\n' +
              'guards:\n  - {guard: pii, tools: [refund], on: [args]}\n',
          ),
        },
      ],
      { env: 'dev' },
    );
    // Everything but the digests in `policies` is the same.
    const answer = (set: typeof scalar, args: JsonObject) => ({
      ...decide(set, { tool: 'refund', args }, who),
      policies: [],
    });
    for (const args of [{ amount: 5 }, { amount: 500 }, { amount: 5, note: 'mail jane@example.com' }] as JsonObject[])
      expect(answer(scalar, args)).toEqual(answer(listed, args));
    expect(decide(scalar, { tool: 'refund', args: { amount: 500 } }, who)).toMatchObject({
      decision: 'require_approval',
      approval: { capability: { amount: 500 } },
    });
    // The digest is of the content as written: the two spellings are two files.
    expect(scalar.identities[0]!.digest).not.toBe(listed.identities[0]!.digest);
    // The same in TOML and JSON.
    const toml = buildPolicySet([
      { path: 'p.toml', bytes: enc('policy = "p"\n[[rules]]\ntools = "refund"\nteams = "support"\nallow = true\n') },
    ]);
    const json = buildPolicySet([
      {
        path: 'p.json',
        bytes: enc('{"policy": "p", "rules": [{"tools": "refund", "teams": "support", "allow": true}]}'),
      },
    ]);
    for (const set of [toml, json]) {
      expect(decide(set, { tool: 'refund', args: {} }, who)).toMatchObject({ decision: 'allow', rule: 'p#0' });
      expect(decide(set, { tool: 'refund', args: {} }, { ...who, team: 'sales' })).toMatchObject({
        decision: 'deny',
        rule: 'p#default',
      });
    }
  });

  it('without `policy`, a file is named by its file name without the extension', () => {
    const set = buildPolicySet([
      { path: 'dir/payments.yaml', bytes: enc('default: allow\nrules:\n  - {tools: wipe, allow: false}\n') },
      { path: 'dir/base.v2.toml', bytes: enc('default = "allow"\n') },
      { path: 'dir/x.test.json', bytes: enc('{"default": "allow"}') },
    ]);
    expect(set.identities.map((i) => i.policy)).toEqual(['base.v2', 'payments', 'x.test']);
    const who = { user: 'u1', team: null, agent: null, roles: [] };
    expect(decide(set, { tool: 'wipe', args: {} }, who)).toMatchObject({ decision: 'deny', rule: 'payments#0' });
  });

  it('two files still cannot share an identity, whether it is written or taken from the file name', () => {
    const named = onlyProblem({ 'a.yaml': 'default: allow\n', 'b.yaml': 'default: deny\npolicy: a\n' });
    expect(named).toMatchObject({
      file: 'b.yaml',
      line: 2,
      column: 9,
      key: 'policy',
      message: 'this policy name is also used by a.yaml',
    });
    const derived = onlyProblem({ 'a.yaml': 'policy: b\n', 'b.json': '{\n  "default": "deny"\n}\n' });
    expect(derived).toMatchObject({
      file: 'b.json',
      line: 1,
      column: 1,
      key: 'policy',
      message: 'this policy name (the file name, as `policy` is not given) is also used by a.yaml',
    });
    const both = onlyProblem({ 'p.json': '{"default": "deny"}', 'p.yaml': 'default: allow\n' });
    expect(both).toMatchObject({ file: 'p.yaml', line: 1, column: 1, key: 'policy' });
  });

  it('a name taken from the file name is checked like a written one', () => {
    const p = onlyProblem({ [`${'x'.repeat(257)}.yaml`]: 'default: allow\n' });
    expect(p).toMatchObject({ line: 1, column: 1, key: 'policy' });
    expect(p.message).toBe('the policy name (the file name, as `policy` is not given) must be 1 to 256 bytes');
  });

  it('refuses an empty document (an empty TOML file is one), but not a file with only `policy`', () => {
    expect(onlyProblem({ 'p.toml': '# nothing yet\n' })).toMatchObject({
      line: 1,
      column: 1,
      key: '',
      message: 'the file is empty: a policy file has at least one key',
    });
    expect(buildPolicySet([{ path: 'p.toml', bytes: enc('policy = "p"\n') }]).identities[0]!.policy).toBe('p');
  });

  it('loads a confirm-only rule (confirm and neither allow nor abort), with its reason and approval shape', () => {
    const set = buildPolicySet([
      {
        path: 'p.yaml',
        bytes: enc(
          'policy: p\ndefault: allow\nrules:\n  - id: big\n    tools: refund\n    confirm: "amount > 100"\n    reason: over 100\n    approval: {kind: big_refund}\n',
        ),
      },
    ]);
    expect(set.files[0]!.rules[0]).toMatchObject({
      id: 'big',
      effect: 'confirm',
      reason: 'over 100',
      approval: { kind: 'big_refund' },
    });
  });

  describe("the Python adapter document's TOML version (test/cases/seed-python holds the YAML one)", () => {
    const toml = `environments = ["dev", "prod"]
default = { dev = "allow", prod = "deny" }

[[rules]]
tools = ["lookup_*", "send_note"]
allow = true

[[rules]]
tools = ["refund"]
allow = true
teams = ["support"]
confirm = "amount > 100"

[[rules]]
tools = ["wipe_orders"]
allow = false
reason = "never from an agent"

[[guards]]
guard = "pii"
tools = ["send_note"]
on = ["args"]
`;
    const budgets = '\n[[budgets]]\nmax_usd = 20\nscope = "user"\nper = "day"\n';

    it('loads without `policy` and decides as the YAML version does, in both environments', async () => {
      for (const env of ['dev', 'prod']) {
        const fromToml = buildPolicySet([{ path: 'policy.toml', bytes: enc(toml) }], { env });
        const fromYaml = await loadPolicies('test/cases/seed-python', { env });
        expect(fromToml.identities[0]!.policy).toBe('policy');
        const callers = [null, 'support', 'sales'].map((team) => ({ user: 'u1', team, agent: null, roles: [] }));
        const requests: [string, JsonObject][] = [
          ['lookup_order', {}],
          ['refund', { amount: 40 }],
          ['refund', { amount: 120 }],
          ['refund', {}],
          ['wipe_orders', {}],
          ['send_note', { text: 'hi' }],
          ['send_note', { text: 'jane@example.com' }],
          ['shell_exec', {}],
        ];
        for (const who of callers) {
          for (const [tool, args] of requests) {
            const a = decide(fromToml, { tool, args }, who);
            const b = decide(fromYaml, { tool, args }, who);
            expect([a.decision, a.rule, a.reason], `${env} ${tool} ${who.team}`).toEqual([
              b.decision,
              b.rule,
              b.reason,
            ]);
          }
        }
      }
    });

    it('with its [[budgets]] table, as written: loads, one max_usd budget per user per day that refuses (test/cases/seed-python-toml)', () => {
      const set = buildPolicySet([{ path: 'policy.toml', bytes: enc(toml + budgets) }], { env: 'prod' });
      expect(set.files[0]!.budgets).toMatchObject([
        {
          type: 'budget',
          id: 'policy#budgets.0',
          measure: { usd: true },
          max: { text: '20' },
          per: { calendar: 'day' },
          scope: 'user',
          onExceed: 'deny',
        },
      ]);
      const d = decide(set, { tool: 'lookup_order', args: {} }, { user: 'u1', team: null, agent: null, roles: [] });
      expect(d.charges?.map((c) => [c.limit.id, c.key, c.amount?.text])).toEqual([
        ['policy#budgets.0', 'user:u1', '0'],
      ]);
    });

    it('with the `store` its document also allows: refused, saying where Gatehouse keeps counters', () => {
      const p = onlyProblem({ 'policy.toml': `${toml + budgets}store = "memory"\n` }, 'prod');
      expect(p).toMatchObject({ file: 'policy.toml', line: 28, key: 'budgets.0.store' });
      expect(p.message).toMatch(/^unknown key: Gatehouse keeps budget counters in its PostgreSQL/);
    });
  });

  it('treats CRLF line endings and a BOM like plain text', () => {
    const plain = buildPolicySet([
      { path: 'p.yaml', bytes: enc('policy: p\nrules:\n  - tools: [a]\n    allow: true\n') },
    ]);
    const crlf = buildPolicySet([
      { path: 'p.yaml', bytes: enc('\uFEFFpolicy: p\r\nrules:\r\n  - tools: [a]\r\n    allow: true\r\n') },
    ]);
    expect(crlf.identities).toEqual(plain.identities);
  });
});
