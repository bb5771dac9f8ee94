// Policy loading under attack (docs/spec.md section 2). A hostile or
// fat-fingered policy repository must never take the service down, pollute Object.prototype, load
// partially, or widen what is allowed: every bad file fails the whole load, quickly and in bounded
// memory, with a PolicyLoadError (never a RangeError or another crash); a failed reload keeps the
// previous set serving.
import { mkdir, mkdtemp, rm, symlink, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decide } from '../../src/policy/decide.js';
import { PolicyLoadError, type LoadProblem } from '../../src/policy/errors.js';
import { compileGlob, GlobError } from '../../src/policy/glob.js';
import { createLivePolicies } from '../../src/policy/live.js';
import { buildPolicySet, loadPolicies } from '../../src/policy/load.js';
import type { Identity, PolicySet } from '../../src/policy/model.js';
import { expectPrototypeClean } from '../helpers/http.js';
import { runs } from '../helpers/runs.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const WHO: Identity = { user: 'u1', team: 'support', agent: 'bot', roles: [] };
const MB = 1024 * 1024;

/** Heap plus Buffers/ArrayBuffers: a file read into memory shows up in `arrayBuffers`, not the heap. */
function memoryNow(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

interface Refusal {
  problems: LoadProblem[];
  ms: number;
  /** Growth of heap + buffers while loading (an upper bound on what the load kept alive meanwhile). */
  bytes: number;
}

/** Loads `files` and expects a PolicyLoadError; anything else (a RangeError, a TypeError) fails the test. */
function refuse(files: Record<string, string | Uint8Array>): Refusal {
  const inputs = Object.entries(files).map(([path, text]) => ({
    path,
    bytes: typeof text === 'string' ? enc(text) : text,
  }));
  const before = memoryNow();
  const started = performance.now();
  let thrown: unknown = null;
  try {
    buildPolicySet(inputs);
  } catch (err) {
    thrown = err;
  }
  const ms = performance.now() - started;
  const bytes = memoryNow() - before;
  if (!(thrown instanceof PolicyLoadError)) {
    throw new Error(`expected a PolicyLoadError, got ${thrown === null ? 'a loaded policy set' : String(thrown)}`);
  }
  return { problems: [...thrown.problems], ms, bytes };
}

function messages(r: Refusal): string {
  return r.problems.map((p) => p.message).join(' | ');
}

// ---------------------------------------------------------------------------------------------------
// YAML bombs and deep nesting (js-yaml #652, #738, #739)

describe('YAML bombs are refused within 1 s and in bounded memory', () => {
  it('billion laughs (9 × 9)', () => {
    let text = 'policy: laughs\nlol0: &lol0 "lol"\n';
    for (let i = 1; i <= 9; i++)
      text += `lol${i}: &lol${i} [${Array.from({ length: 9 }, () => `*lol${i - 1}`).join(', ')}]\n`;
    const r = refuse({ 'bomb.yaml': text });
    expect(messages(r)).toMatch(/YAML (aliases|anchors) are not allowed/);
    expect(r.ms).toBeLessThan(1000);
    expect(r.bytes).toBeLessThan(50 * MB);
  });

  it('the two-way 20-level alias bomb of js-yaml #738 (2^21 logical leaves, consumed by a real key)', () => {
    let text = 'policy: twoway\nx0: &x0 [a, b]\n';
    for (let i = 1; i <= 20; i++) text += `x${i}: &x${i} [*x${i - 1}, *x${i - 1}]\n`;
    text += 'rules:\n  - tools: *x20\n    allow: true\n';
    const r = refuse({ 'bomb.yaml': text });
    expect(messages(r)).toMatch(/YAML (aliases|anchors) are not allowed/);
    expect(r.ms).toBeLessThan(1000);
    expect(r.bytes).toBeLessThan(50 * MB);
  });

  it('a single alias is refused too (no alias budget to spend)', () => {
    const r = refuse({ 'p.yaml': 'policy: p\nx: &a [t]\nrules:\n  - tools: *a\n    allow: true\n' });
    expect(messages(r)).toMatch(/aliases are not allowed/);
  });
});

describe('deep nesting is a depth error, never a RangeError, within 1 s and in bounded memory', () => {
  const flow = (n: number): string => `policy: deep\nx: ${'['.repeat(n)}${']'.repeat(n)}\n`;
  const cases: [string, () => Record<string, string>][] = [
    ['2,200 flow sequences (the js-yaml #739 crash depth)', () => ({ 'p.yaml': flow(2_200) })],
    ['100,000 flow sequences', () => ({ 'p.yaml': flow(100_000) })],
    ['100,000 unclosed flow sequences', () => ({ 'p.yaml': `policy: deep\nx: ${'['.repeat(100_000)}\n` })],
    [
      '100,000 flow mappings',
      () => ({ 'p.yaml': `policy: deep\nx: ${'{a: '.repeat(100_000)}1${'}'.repeat(100_000)}\n` }),
    ],
    [
      '1,000 levels of block mappings',
      () => {
        let text = 'policy: deep\nx:\n';
        for (let i = 1; i <= 1000; i++) text += `${' '.repeat(i)}k${i}:\n`;
        return { 'p.yaml': `${text}${' '.repeat(1001)}v: 1\n` };
      },
    ],
    [
      '100,000 compact block sequences on one line (- - - … x)',
      () => ({ 'p.yaml': `policy: deep\nx:\n  ${'- '.repeat(100_000)}x\n` }),
    ],
    ['100,000 explicit keys (? ? ? … x)', () => ({ 'p.yaml': `policy: deep\nx:\n  ${'? '.repeat(100_000)}x\n` })],
    [
      '100,000 nested JSON arrays',
      () => ({ 'p.json': `{"policy":"deep","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}` }),
    ],
    [
      '100,000 nested TOML arrays',
      () => ({ 'p.toml': `policy = "deep"\nx = ${'['.repeat(100_000)}${']'.repeat(100_000)}\n` }),
    ],
    [
      '100,000 nested TOML inline tables',
      () => ({ 'p.toml': `policy = "deep"\nx = ${'{a='.repeat(100_000)}1${'}'.repeat(100_000)}\n` }),
    ],
  ];
  for (const [name, make] of cases) {
    it(name, () => {
      const files = make();
      const r = refuse(files);
      expect(messages(r)).toMatch(/nesting deeper than 32|nested|syntax|depth/i);
      expect(messages(r)).not.toMatch(/call stack|RangeError|resource_exhaustion/i);
      expect(r.ms).toBeLessThan(1000);
      expect(r.bytes).toBeLessThan(50 * MB);
    });
  }

  it('nesting just inside the limit still loads; one level more is refused with the same message in every format', () => {
    // At most 32 nested arrays/objects, the root included, in every format. The schema is the 4th
    // (root, tools, t, schema); 28 `not`s make its innermost {} the 32nd.
    const nots = (n: number): string => `${'{"not":'.repeat(n)}{}${'}'.repeat(n)}`;
    for (const [name, text] of [
      ['p.yaml', `policy: p\ntools:\n  t:\n    kind: read_only\n    schema: ${nots(28)}\n`],
      ['p.json', `{"policy":"p","tools":{"t":{"kind":"read_only","schema":${nots(28)}}}}`],
      ['p.toml', `policy = "p"\n[tools.t]\nkind = "read_only"\nschema = ${nots(28).replace(/"not":/g, 'not = ')}\n`],
    ] as const) {
      expect(() => buildPolicySet([{ path: name, bytes: enc(text) }]), name).not.toThrow();
    }
    const yamlDeep = `policy: p\ntools:\n  t:\n    kind: read_only\n    schema: ${nots(29)}\n`;
    const jsonDeep = `{"policy":"p","tools":{"t":{"kind":"read_only","schema":${nots(29)}}}}`;
    const tomlDeep = `policy = "p"\n[tools.t]\nkind = "read_only"\nschema = ${nots(29).replace(/"not":/g, 'not = ')}\n`;
    for (const r of [refuse({ 'p.yaml': yamlDeep }), refuse({ 'p.json': jsonDeep }), refuse({ 'p.toml': tomlDeep })]) {
      expect(messages(r)).toMatch(/nesting deeper than 32/);
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// Merge keys and tags (CVE-2025-64718)

describe('merge keys and tags', () => {
  it('`<<: {__proto__: {polluted: true}}` is refused and Object.prototype stays clean', () => {
    for (const text of [
      'policy: p\ntools:\n  t:\n    <<: {__proto__: {polluted: true}}\n    kind: read_only\n',
      'policy: p\n<<: {__proto__: {polluted: true}}\n',
      'policy: p\nbase: &base {__proto__: {polluted: true}}\ntools:\n  t:\n    <<: *base\n    kind: read_only\n',
      'policy: p\ntools:\n  t:\n    <<: [{__proto__: {isAdmin: true}}, {kind: read_only}]\n',
    ]) {
      const r = refuse({ 'p.yaml': text });
      expect(messages(r)).toMatch(/merge keys|aliases|anchors/);
      expectPrototypeClean();
    }
  });

  it('a `__proto__` KEY is plain data: never a prototype, and Object.prototype stays clean', () => {
    for (const [name, text] of [
      [
        'p.yaml',
        'policy: p\ntools:\n  __proto__: {kind: read_only}\n  constructor: {kind: read_only}\nrules:\n  - tools: [__proto__]\n    allow: true\n',
      ],
      [
        'p.json',
        '{"policy":"p","tools":{"__proto__":{"kind":"read_only"},"constructor":{"kind":"read_only"}},"rules":[{"tools":["__proto__"],"allow":true}]}',
      ],
      [
        'p.toml',
        'policy = "p"\n[tools.__proto__]\nkind = "read_only"\n[tools.constructor]\nkind = "read_only"\n[[rules]]\ntools = ["__proto__"]\nallow = true\n',
      ],
    ] as const) {
      const set = buildPolicySet([{ path: name, bytes: enc(text) }]);
      expect(decide(set, { tool: '__proto__', args: {} }, WHO).decision, name).toBe('allow');
      // A tool literally named like an inherited member is just a name, and only its own entry counts.
      expect(decide(set, { tool: 'toString', args: {} }, WHO).decision, name).toBe('deny');
      expect(decide(set, { tool: 'hasOwnProperty', args: {} }, WHO).decision, name).toBe('deny');
      expectPrototypeClean();
    }
  });

  // Every explicit or custom tag, even a standard one: a policy is plain data.
  const tags = [
    '!!js/function "function () { return 1 }"',
    '!!js/regexp /a+/',
    '!!js/undefined ""',
    '!!binary aGVsbG8=',
    '!!timestamp 2001-12-14',
    '!!set {a, b}',
    '!!omap [a: 1]',
    '!!str tagged',
    '!<tag:yaml.org,2002:str> verbatim',
    '!include other.yaml',
    '!Ref SomeResource',
    '!GetAtt a.b',
    '!python/object:os.system ls',
  ];
  for (const tag of tags) {
    it(`tag ${tag.split(' ')[0]} is refused`, () => {
      const r = refuse({ 'p.yaml': `policy: p\nversion: ${tag}\n` });
      expect(messages(r)).toMatch(/tags are not allowed/);
      expect(messages(r)).not.toContain(tag.split(' ').slice(1).join(' ')); // the value is never echoed
    });
  }

  it('a tag on a key, in a flow collection, or on a rule is refused too', () => {
    for (const text of [
      'policy: p\n!!str version: "1"\n',
      'policy: p\nrules:\n  - tools: [!!str a]\n    allow: true\n',
      'policy: p\nrules:\n  - !!map {tools: [a], allow: true}\n',
      'policy: p\nrules: !!seq\n  - tools: [a]\n    allow: true\n',
    ]) {
      expect(messages(refuse({ 'p.yaml': text }))).toMatch(/tags are not allowed/);
    }
  });

  it('YAML 1.1 implicit types stay strings (core schema): an unquoted date, yes/no, 0o10', () => {
    const set = buildPolicySet([{ path: 'p.yaml', bytes: enc('policy: p\nversion: 2001-12-14\n') }]);
    expect(set.identities[0]?.version).toBe('2001-12-14');
    expect(messages(refuse({ 'p.yaml': 'policy: p\nrules:\n  - tools: [a]\n    allow: yes\n' }))).toMatch(/boolean/);
    expect(messages(refuse({ 'p.yaml': 'policy: p\nlimits: {max_calls: .inf}\n' }))).toMatch(/finite|integer|must be/);
  });
});

// ---------------------------------------------------------------------------------------------------
// Documents, empty files, missing policies

describe('documents and empty inputs', () => {
  it('multi-document files are refused, whatever the documents hold', () => {
    for (const text of [
      'policy: p\n---\npolicy: q\n',
      '---\npolicy: p\n---\n',
      'policy: p\n...\n---\npolicy: p\n',
      '---\n---\n',
    ]) {
      expect(messages(refuse({ 'p.yaml': text })), JSON.stringify(text)).toMatch(
        /exactly one YAML document|must be object|required/,
      );
    }
  });

  it('an empty file, a comments-only file, a lone `---` and a BOM-only file are refused in every format', () => {
    const empties: Record<string, string | Uint8Array> = {
      'empty.yaml': '',
      'comments.yaml': '# nothing\n# here\n',
      'marker.yaml': '---\n',
      'end.yaml': '...\n',
      'bom.yaml': new Uint8Array([0xef, 0xbb, 0xbf]),
      'empty.json': '',
      'ws.json': '  \n\t\n',
      'empty.toml': '',
      'comments.toml': '# nothing\n',
    };
    for (const [name, content] of Object.entries(empties)) {
      const r = refuse({ [name]: content });
      expect(r.problems[0]?.file, name).toBe(name);
    }
  });

  describe('a directory with no policy files: the built-in side_effects default denies every tool', () => {
    let dir: string;
    let set: PolicySet;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'gatehouse-rel-empty-'));
      // Not policies: a test file, a dotfile, other extensions, a subdirectory holding a policy.
      await writeFile(join(dir, 'p.test.yaml'), 'cases: []\n');
      await writeFile(join(dir, '.hidden.yaml'), 'policy: hidden\ndefault: allow\n');
      await writeFile(join(dir, 'README.md'), '# policies\n');
      await writeFile(join(dir, 'allow.yaml.bak'), 'policy: bak\ndefault: allow\n');
      await mkdir(join(dir, 'sub.yaml'));
      await writeFile(join(dir, 'sub.yaml', 'inner.yaml'), 'policy: inner\ndefault: allow\n');
      set = await loadPolicies(dir);
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('loads zero files', () => {
      expect(set.files).toHaveLength(0);
    });

    it('denies any tool name with any arguments (never allow, never an approval)', () => {
      fc.assert(
        fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.jsonValue(), (tool, args) => {
          const r = decide(set, { tool, args: { a: args } as never }, WHO);
          expect(r.decision).toBe('deny');
          expect(r.approval).toBeUndefined();
        }),
        { numRuns: runs(300) },
      );
      for (const tool of ['lookup_order', 'refund', 'read_file', '__proto__', '*'])
        expect(decide(set, { tool, args: {} }, WHO).decision).toBe('deny');
    });
  });
});

// ---------------------------------------------------------------------------------------------------
// Filesystem hazards

describe('filesystem hazards', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'gatehouse-rel-fs-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function freshDir(name: string): Promise<string> {
    const dir = join(root, name);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  async function loadError(dir: string): Promise<LoadProblem[]> {
    try {
      await loadPolicies(dir);
    } catch (err) {
      expect(err).toBeInstanceOf(PolicyLoadError);
      return [...(err as PolicyLoadError).problems];
    }
    throw new Error('expected the load to fail');
  }

  it('a symlink leading OUT of the policy directory is refused (the whole load fails)', async () => {
    const outside = await freshDir('outside');
    await writeFile(join(outside, 'loose.yaml'), 'policy: loose\ndefault: allow\n');
    const dir = await freshDir('escape');
    await writeFile(join(dir, 'a.yaml'), 'policy: a\n');
    await symlink(join(outside, 'loose.yaml'), join(dir, 'b.yaml'));
    const problems = await loadError(dir);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({
      file: join(dir, 'b.yaml'),
      message: expect.stringMatching(/outside the policy directory/),
    });
  });

  it('a relative ../ symlink, a chain of in-directory links ending outside, and a dangling link are refused', async () => {
    const outside = await freshDir('outside2');
    await writeFile(join(outside, 'x.yaml'), 'policy: x\ndefault: allow\n');
    for (const [name, make] of [
      ['relative', async (dir: string) => symlink('../outside2/x.yaml', join(dir, 'r.yaml'))],
      [
        'chain',
        async (dir: string) => {
          await symlink(join(outside, 'x.yaml'), join(dir, '.hop'));
          await symlink(join(dir, '.hop'), join(dir, 'c.yaml'));
        },
      ],
      ['dangling', async (dir: string) => symlink(join(dir, 'nowhere.yaml'), join(dir, 'd.yaml'))],
      ['etc', async (dir: string) => symlink('/etc/hostname', join(dir, 'e.yaml'))],
    ] as const) {
      const dir = await freshDir(`links-${name}`);
      await make(dir);
      const problems = await loadError(dir);
      expect(problems.map((p) => p.message).join(), name).toMatch(/outside the policy directory/);
    }
  });

  it('a symlink INSIDE the directory works (a Kubernetes ConfigMap mount is symlinks)', async () => {
    const dir = await freshDir('configmap');
    await mkdir(join(dir, '..2024_01_01'));
    await writeFile(join(dir, '..2024_01_01', 'p.yaml'), 'policy: mounted\ntools: {t: {kind: read_only}}\n');
    await symlink('..2024_01_01', join(dir, '..data'));
    await symlink(join('..data', 'p.yaml'), join(dir, 'p.yaml'));
    const set = await loadPolicies(dir);
    expect(set.identities.map((i) => i.policy)).toEqual(['mounted']);
    expect(decide(set, { tool: 't', args: {} }, WHO).decision).toBe('allow');
  });

  it('a 50 MB file is refused without being read into memory', async () => {
    const dir = await freshDir('huge');
    await writeFile(join(dir, 'a.yaml'), 'policy: a\n');
    await writeFile(join(dir, 'huge.yaml'), 'policy: huge\n');
    await truncate(join(dir, 'huge.yaml'), 50 * MB); // sparse: cheap to make
    const before = memoryNow();
    const started = performance.now();
    const problems = await loadError(dir);
    const grew = memoryNow() - before;
    expect(performance.now() - started).toBeLessThan(1000);
    expect(problems).toEqual([
      expect.objectContaining({ file: join(dir, 'huge.yaml'), message: expect.stringMatching(/larger than/) }),
    ]);
    expect(grew).toBeLessThan(20 * MB);
    // Given as the target itself (a single file), too.
    await expect(loadPolicies(join(dir, 'huge.yaml'))).rejects.toMatchObject({
      problems: [expect.objectContaining({ message: expect.stringMatching(/larger than/) })],
    });
  });

  it('non-UTF-8 bytes are refused in every format, in several forms', () => {
    const forms: [string, number[]][] = [
      ['a lone continuation byte', [0x80]],
      ['an invalid lead byte', [0xff]],
      ['an overlong slash', [0xc0, 0xaf]],
      ['an encoded surrogate', [0xed, 0xa0, 0x80]],
      ['a truncated sequence', [0xe2, 0x82]],
      ['beyond U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
      ['Latin-1 é', [0xe9]],
    ];
    for (const [what, bad] of forms) {
      for (const [name, head, tail] of [
        ['p.yaml', 'policy: "p', '"\n'],
        ['p.json', '{"policy": "p', '"}'],
        ['p.toml', 'policy = "p', '"\n'],
      ] as const) {
        const bytes = new Uint8Array([...enc(head), ...bad, ...enc(tail)]);
        const r = refuse({ [name]: bytes });
        expect(messages(r), `${what} in ${name}`).toMatch(/not valid UTF-8/);
      }
    }
  });

  it('CRLF line endings and a BOM give the same digest (and decisions) as LF without a BOM, in every format', () => {
    const texts: Record<string, string> = {
      'p.yaml':
        'policy: p\nversion: "1"\ntools:\n  t: {kind: read_only}\nrules:\n  - id: r\n    tools: [t]\n    when: "amount > 5"\n    allow: false\n',
      'p.json':
        '{\n  "policy": "p",\n  "version": "1",\n  "tools": {"t": {"kind": "read_only"}},\n  "rules": [{"id": "r", "tools": ["t"], "when": "amount > 5", "allow": false}]\n}\n',
      'p.toml':
        'policy = "p"\nversion = "1"\n[tools.t]\nkind = "read_only"\n[[rules]]\nid = "r"\ntools = ["t"]\nwhen = "amount > 5"\nallow = false\n',
    };
    const digests = new Set<string>();
    for (const [name, lf] of Object.entries(texts)) {
      const variants = [lf, lf.replace(/\n/g, '\r\n'), `\uFEFF${lf}`, `\uFEFF${lf.replace(/\n/g, '\r\n')}`];
      const sets = variants.map((text) => buildPolicySet([{ path: name, bytes: enc(text) }]));
      for (const set of sets) {
        digests.add(set.identities[0]!.digest);
        expect(decide(set, { tool: 't', args: { amount: 9 } }, WHO).decision).toBe('deny');
        expect(decide(set, { tool: 't', args: { amount: 1 } }, WHO).decision).toBe('allow');
      }
    }
    expect(digests.size).toBe(1); // the same content in all three formats, every variant
  });

  it('a BOM in the middle of a file is content, not ignored', () => {
    // U+FEFF inside a string is data: a different digest (or a refusal), never silently the same policy.
    const plain = buildPolicySet([{ path: 'p.yaml', bytes: enc('policy: p\nversion: "1"\n') }]);
    let other: PolicySet | null = null;
    try {
      other = buildPolicySet([{ path: 'p.yaml', bytes: enc('policy: p\nversion: "\uFEFF1"\n') }]);
    } catch (err) {
      expect(err).toBeInstanceOf(PolicyLoadError);
    }
    if (other) expect(other.identities[0]!.digest).not.toBe(plain.identities[0]!.digest);
  });
});

// ---------------------------------------------------------------------------------------------------
// A file truncated or rewritten during reload (docs/spec.md section 2 "Reload")

describe('reload while a file is being written: a failed reload keeps the old set serving', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-rel-reload-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const versionA =
    'policy: p\nversion: A\ntools:\n  t: {kind: read_only}\n  w: {kind: destructive}\nrules:\n  - id: a-allows-t\n    tools: [t]\n    allow: true\n';
  const versionB =
    'policy: p\nversion: B\ntools:\n  t: {kind: read_only}\n  w: {kind: destructive}\nrules:\n  - id: b-denies-t\n    tools: [t]\n    allow: false\n    reason: "version B [denies] t"\n';

  it('half a file → failure reported, A still serving; the whole file → B', async () => {
    const file = join(dir, 'p.yaml');
    await writeFile(file, versionA);
    const live = await createLivePolicies(dir, null);
    const digestA = live.current().identities[0]!.digest;
    expect(decide(live.current(), { tool: 't', args: {} }, WHO)).toMatchObject({
      decision: 'allow',
      rule: 'a-allows-t',
    });

    // Cut inside the flow collection of the reason's line: an unclosed quote, never valid YAML.
    const cut = versionB.indexOf('[denies');
    await writeFile(file, versionB.slice(0, cut));
    const failed = await live.reload();
    expect(failed.ok).toBe(false);
    expect(live.lastFailure()?.problems.join('\n')).toMatch(/p\.yaml/);
    expect(live.current().identities[0]).toMatchObject({ version: 'A', digest: digestA });
    expect(decide(live.current(), { tool: 't', args: {} }, WHO).decision).toBe('allow');

    // Truncated to nothing (the moment after O_TRUNC): refused too.
    await writeFile(file, '');
    expect((await live.reload()).ok).toBe(false);
    expect(live.current().identities[0]?.version).toBe('A');

    await writeFile(file, versionB);
    expect(await live.reload()).toEqual({ ok: true });
    expect(live.lastFailure()).toBeNull();
    expect(live.current().identities[0]?.version).toBe('B');
    expect(decide(live.current(), { tool: 't', args: {} }, WHO)).toMatchObject({
      decision: 'deny',
      rule: 'b-denies-t',
    });
  });

  it('JSON: EVERY strict prefix of the new file fails the reload and the old set keeps serving', async () => {
    await rm(join(dir, 'p.yaml'), { force: true });
    const file = join(dir, 'p.json');
    const a = JSON.stringify(
      {
        policy: 'p',
        version: 'A',
        tools: { t: { kind: 'read_only' } },
        rules: [{ id: 'ra', tools: ['t'], allow: true }],
      },
      null,
      2,
    );
    const b = JSON.stringify(
      {
        policy: 'p',
        version: 'B',
        tools: { t: { kind: 'read_only' } },
        rules: [
          { id: 'rb', tools: ['t'], allow: false },
          { id: 'rb2', tools: ['x'], allow: true },
        ],
      },
      null,
      2,
    );
    await writeFile(file, a);
    const live = await createLivePolicies(dir, null);
    for (let cut = 0; cut < b.length; cut += 3) {
      await writeFile(file, b.slice(0, cut));
      const outcome = await live.reload();
      expect(outcome.ok, `prefix of ${cut} bytes`).toBe(false);
      expect(live.current().identities[0]?.version).toBe('A');
    }
    await writeFile(file, b);
    expect((await live.reload()).ok).toBe(true);
    expect(live.current().identities[0]?.version).toBe('B');
  });

  it('reloads racing a rewrite only ever serve complete versions', async () => {
    await rm(join(dir, 'p.json'), { force: true });
    const file = join(dir, 'p.json');
    const make = (v: string, allow: boolean): string =>
      JSON.stringify(
        {
          policy: 'p',
          version: v,
          tools: { t: { kind: 'read_only' } },
          rules: [{ id: `r${v}`, tools: ['t'], allow }],
          guards: [],
        },
        null,
        1,
      ).padEnd(20_000, ' ');
    const versions: Record<string, string> = { A: make('A', true), B: make('B', false) };
    await writeFile(file, versions.A!);
    const live = await createLivePolicies(dir, null);
    const seen = new Set<string>();
    let writing = true;
    const writer = (async () => {
      for (let i = 0; i < 60; i++) await writeFile(file, versions[i % 2 === 0 ? 'B' : 'A']!);
      writing = false;
    })();
    while (writing) {
      await live.reload();
      const set = live.current();
      const v = set.identities[0]!.version!;
      seen.add(v);
      expect(['A', 'B']).toContain(v);
      expect(decide(set, { tool: 't', args: {} }, WHO).decision).toBe(v === 'A' ? 'allow' : 'deny');
    }
    await writer;
    expect(seen.size).toBeGreaterThanOrEqual(1);
  });
});

// ---------------------------------------------------------------------------------------------------
// Globs

describe('tool globs', () => {
  const refusedGlobs = [
    '{a,b}',
    '{a,b}'.repeat(20),
    'x{' + 'a,'.repeat(500) + 'b}',
    '**',
    '**/**/**/**/**',
    'a**b',
    'lookup_[',
    '[a-',
    'a]',
    '!(a)',
    '@(a|b)',
    '+(a)',
    'a\\*',
    '*'.repeat(300),
  ];
  for (const glob of refusedGlobs) {
    it(`refuses ${JSON.stringify(glob.length > 30 ? `${glob.slice(0, 30)}…` : glob)} at load`, () => {
      expect(() => compileGlob(glob)).toThrow(GlobError);
      const r = refuse({ 'p.yaml': `policy: p\nrules:\n  - tools: [${JSON.stringify(glob)}]\n    allow: true\n` });
      expect(r.problems[0]?.key).toBe('rules.0.tools.0');
      const r2 = refuse({ 'p.yaml': `policy: p\ntools:\n  ${JSON.stringify(glob)}: {kind: read_only}\n` });
      expect(r2.problems.length).toBeGreaterThan(0);
    });
  }

  it('matching a 10,000-character tool name against `*a*a*a*a*a*a*b` completes at once', () => {
    const g = compileGlob('*a*a*a*a*a*a*b');
    const started = performance.now();
    expect(g.test('a'.repeat(10_000))).toBe(false);
    expect(g.test(`${'a'.repeat(10_000)}b`)).toBe(true);
    expect(g.test('ab'.repeat(5_000))).toBe(true);
    expect(g.test(`${'a'.repeat(9_999)}c`)).toBe(false);
    expect(compileGlob('*?*?*?*?*?*?*?*?*?*?*?*?*c').test('x'.repeat(10_000))).toBe(false);
    expect(compileGlob('*[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*[!a-z]').test('q'.repeat(10_000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('the same pathological globs in a policy: deciding a 10,000-character name completes and is not allowed', () => {
    const set = buildPolicySet([
      {
        path: 'p.yaml',
        bytes: enc(
          'policy: p\ntools:\n  "*a*a*a*a*a*a*b": {kind: read_only}\nrules:\n' +
            '  - tools: ["*a*a*a*a*a*a*b", "*?*?*?*?*?*?*?*?*c"]\n    allow: true\n',
        ),
      },
    ]);
    const started = performance.now();
    for (let i = 0; i < 20; i++) {
      expect(decide(set, { tool: `${'a'.repeat(10_000)}${i}`, args: {} }, WHO).decision).toBe('deny');
    }
    expect(decide(set, { tool: `${'a'.repeat(10_000)}b`, args: {} }, WHO).decision).toBe('allow');
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
