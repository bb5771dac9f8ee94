// @ts-check
// Micro-benchmarks of the built code (dist/): decide() over generated policy sets of 100 and 10,000
// rules, explain(), the strict JSON parser against JSON.parse, canonical form + SHA-256, the
// rule index's plan() miss against a hit, and the pii guard's scan. Every figure: a warm-up, then
// several timed runs; the per-op time is sampled per batch of ops (a batch takes about 20 µs),
// median and p99 over samples.
//
//   node bench/micro.mjs [--quick] [--json out.json]
//   node bench/micro.mjs --guards [--quick]   (the guard scans alone)
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { approvalHash, canonicalize, sha256 } from '../dist/json/canonical.js';
import { parseJson } from '../dist/json/parse.js';
import { decide, explain } from '../dist/policy/decide.js';
import { runGuard } from '../dist/policy/guards.js';
import { loadConfig } from '../dist/config.js';
import { buildPolicySet, loadPolicies } from '../dist/policy/load.js';
import { DECIDE_BODY, DECIDE_TEXT, IDENTITY, largeBody } from './lib/bodies.mjs';
import { compileCondition } from '../dist/policy/condition/compile.js';
import { LANGUAGE_REQUEST, languagePolicyFiles, mixedTools, policyFiles, probes } from './lib/gen-policies.mjs';
import { fmt, fmtInt, measure, parseArgs, table, targetsTable } from './lib/stats.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export const TARGETS = {
  decide100MedianUs: 2,
  decide10kMedianUs: 10,
  hashUs: 5,
  parseRatio: 3,
  /** decide() over 100 rules written with the string operators and built-ins: 2× the ~1 µs of decide() before them. */
  language100MedianUs: 2,
  builtin1KiBUs: 20,
};

/** @param {boolean} quick */
function measureOptions(quick) {
  return quick ? { warmupMs: 50, runs: 3, runMs: 60 } : { warmupMs: 300, runs: 5, runMs: 300 };
}

/** @typedef {{ medianUs: number, p99Us: number, opsPerSec: number }} Measured */
/** @typedef {Measured & { group: string, name: string, extra: string }} Row */
/** @typedef {(group: string, name: string, r: Measured, extra?: string) => Measured} Add */

/**
 * Rows collected, each printed as it comes.
 * @param {(line: string) => void} log
 * @returns {{ rows: Row[], add: Add }}
 */
function collector(log) {
  /** @type {Row[]} */
  const rows = [];
  /** @type {Add} */
  const add = (group, name, r, extra = '') => {
    rows.push({ group, name, ...r, extra });
    log(
      `  ${group.padEnd(22)} ${name.padEnd(34)} median ${fmt(r.medianUs, 3).padStart(9)} µs  p99 ${fmt(r.p99Us, 3).padStart(9)} µs  ${fmtInt(r.opsPerSec).padStart(12)} ops/s  ${extra}`,
    );
    return r;
  };
  return { rows, add };
}

/**
 * @typedef {object} GeneratedSet
 * @property {import('../dist/policy/model.js').PolicySet} set
 * @property {Record<string, string>} probes
 * @property {number} loadMs
 * @property {import('./lib/gen-policies.mjs').GenDoc} doc
 * @property {{ path: string, bytes: Buffer }[]} files
 * @property {number} conditions
 * @property {Measured} [confirmHash]
 */

export async function runMicro({ quick = false, log = console.log } = {}) {
  const opts = measureOptions(quick);
  const { rows, add } = collector(log);

  // ---- decide() over generated sets --------------------------------------------------------------
  const identity = { user: 'u1', team: 'team3', agent: 'bot1', roles: [] };
  const args = { amount: 500, note: 'customer asked twice' };
  /** @type {Record<number, GeneratedSet>} */
  const sets = {};
  for (const n of [100, 10_000]) {
    const t0 = performance.now();
    const { doc, files } = policyFiles(n);
    const set = buildPolicySet(files, { env: null });
    const loadMs = performance.now() - t0;
    const p = probes(doc, (tool) => decide(set, { tool, args }, identity));
    sets[n] = {
      set,
      probes: p,
      loadMs,
      doc,
      files,
      conditions: doc.rules.filter((r) => r.when !== undefined || r.confirm !== undefined).length,
    };
    log(
      `decide(): ${n} generated rules (${Object.keys(doc.tools).length} catalogue entries, ${fmtInt(files[0].bytes.length)} bytes of JSON, built in ${fmt(loadMs, 0)} ms)`,
    );
    for (const [shape, tool] of Object.entries(p)) {
      const req = { tool, args };
      const res = decide(set, req, identity);
      const candidates = set.plan(tool).views[0].files[0].rules.length;
      add(
        `decide ${n}`,
        shape,
        measure(() => decide(set, req, identity), opts),
        `${tool} → ${res.decision} by ${res.rule}; ${candidates} candidate rule(s)`,
      );
    }
    // The hash a require_approval answer carries, computed alone over that answer's own input.
    const confirmReq = { tool: p.confirm, args };
    const { kind, capability, presentation } = /** @type {import('../dist/policy/model.js').ApprovalDescriptor} */ (
      decide(set, confirmReq, identity).approval
    );
    const hashInput = { tool: p.confirm, args, kind, capability, presentation };
    /** @type {GeneratedSet} */ (sets[n]).confirmHash = add(
      `decide ${n}`,
      'approvalHash of the confirm answer',
      measure(() => approvalHash(hashInput), opts),
      `${Buffer.byteLength(canonicalize(hashInput))} B canonical`,
    );
    // The stream: one request after another over every tool, so a sample is the mean of whatever
    // mix of answers its batch held (approval hashes included, in their share).
    const stream = mixedTools(doc).map((tool) => ({ tool, args }));
    /** @type {Record<string, number>} */
    const mix = {};
    for (const req of stream) {
      const d = decide(set, req, identity).decision;
      mix[d] = (mix[d] ?? 0) + 1;
    }
    const mixText = Object.entries(mix)
      .sort()
      .map(([d, k]) => `${d} ${fmt((100 * k) / stream.length, 0)}%`)
      .join(', ');
    let i = 0;
    add(
      `decide ${n}`,
      `mixed stream (${stream.length} tools)`,
      measure(() => decide(set, stream[i++ % stream.length], identity), opts),
      mixText,
    );
  }

  // ---- decide() over 100 rules written with the string operators, built-ins and roots -----------
  /** @type {{ conditions?: number, mixed?: Measured, argv?: Measured, path?: Measured }} */
  const language = {};
  {
    const { doc, files } = languagePolicyFiles(100);
    const set = buildPolicySet(files, { env: null });
    const stream = mixedTools(doc).map((tool) => ({ tool, ...LANGUAGE_REQUEST }));
    const langIdentity = { ...identity, roles: ['agent'] };
    const conditions = doc.rules.filter((r) => r.when !== undefined || r.confirm !== undefined).length;
    language.conditions = conditions;
    log(
      `decide(): the 100 generated rules with ${conditions} conditions over string operators, built-ins, $caller, $context and $run`,
    );
    let i = 0;
    language.mixed = add(
      'decide 100 language',
      `mixed stream (${stream.length} tools)`,
      measure(() => decide(set, stream[i++ % stream.length], langIdentity), opts),
    );
    // argv() and path() on a 1 KiB argument, each in a compiled condition as a rule has it.
    // Exactly 1 KiB each: quoted words, and segments with `.` and `..` to resolve.
    let command = 'git status --short';
    for (let k = 0; command.length < 1000; k++) command += ` 'file ${k}.ts'`;
    command = `${command} ${'x'.repeat(1023 - command.length)}`;
    let file = '/repo';
    for (let k = 0; file.length < 1000; k++) file += k % 7 === 3 ? '/..' : k % 5 === 1 ? '/.' : `/d${k}`;
    file = `${file}/${'f'.repeat(1023 - file.length)}`;
    const input = (/** @type {import('../dist/json/value.js').JsonObject} */ args) => ({
      args,
      caller: langIdentity,
      context: undefined,
      run: undefined,
      env: null,
    });
    const argv = compileCondition('argv(command) startswith ["git", "status"]');
    const argvIn = input({ command });
    language.argv = add(
      'built-ins 1 KiB',
      `argv() of a ${command.length}-character command`,
      measure(() => argv.evaluate(argvIn), opts),
      `→ ${argv.evaluate(argvIn)}`,
    );
    const path = compileCondition('path(file) startswith "/repo/"');
    const pathIn = input({ file });
    language.path = add(
      'built-ins 1 KiB',
      `path() of a ${file.length}-character path`,
      measure(() => path.evaluate(pathIn), opts),
      `→ ${path.evaluate(pathIn)}`,
    );
  }

  // ---- decide() over the example policies, with the HTTP benchmark's body ------------------------
  const payments = await loadPolicies(`${ROOT}policies`, { env: 'prod' });
  {
    const req = { tool: DECIDE_BODY.tool, args: DECIDE_BODY.args, run: DECIDE_BODY.run };
    const res = decide(payments, req, IDENTITY);
    log('decide(): the example policies (policies/, env prod), the /decide benchmark body');
    add(
      'decide example',
      'refund (schema + confirm + limits)',
      measure(() => decide(payments, req, IDENTITY), opts),
      `→ ${res.decision} by ${res.rule}`,
    );
  }

  // ---- explain() -----------------------------------------------------------------------------------
  log('explain(): 100 generated rules');
  {
    const { set, probes: p } = sets[100];
    for (const shape of ['exact', 'condition']) {
      const req = { tool: p[shape], args };
      add(
        'explain 100',
        shape,
        measure(() => explain(set, req, identity), opts),
      );
    }
  }

  // ---- strict parse vs JSON.parse ------------------------------------------------------------------
  log('parseJson (strict, from bytes) vs JSON.parse (from the same bytes, decoded)');
  /** @type {Record<string, { ratio: number, ratioVsString: number }>} */
  const parse = {};
  for (const [label, text] of [
    ['300 B', DECIDE_TEXT],
    ['100 KB', JSON.stringify(largeBody())],
  ]) {
    const bytes = Buffer.from(text);
    const strict = add(
      'parse',
      `parseJson ${label} (${bytes.length} B)`,
      measure(() => parseJson(bytes), opts),
    );
    const native = add(
      'parse',
      `JSON.parse(buf.toString()) ${label}`,
      measure(() => JSON.parse(bytes.toString('utf8')), opts),
    );
    const nativeStr = add(
      'parse',
      `JSON.parse(string) ${label}`,
      measure(() => JSON.parse(text), opts),
    );
    parse[label] = { ratio: strict.medianUs / native.medianUs, ratioVsString: strict.medianUs / nativeStr.medianUs };
    log(
      `  ratio parseJson / JSON.parse(buf.toString()) at ${label}: ${fmt(parse[label].ratio)}x (vs JSON.parse of a ready string: ${fmt(parse[label].ratioVsString)}x)`,
    );
  }

  // ---- canonical form + SHA-256 ---------------------------------------------------------------------
  log('canonical form + SHA-256 of the ~300-byte request');
  // As the server has it: parsed strictly (DECIDE_TEXT is a /decide body: a tool name and its arguments).
  const request = /** @type {{ tool: string, args: import('../dist/json/value.js').JsonObject }} */ (
    parseJson(Buffer.from(DECIDE_TEXT))
  );
  const canonicalText = canonicalize(request);
  /** @type {Record<string, Measured>} */
  const hashRows = {};
  hashRows.canonical = add(
    'hash',
    `canonicalize (${Buffer.byteLength(canonicalText)} B out)`,
    measure(() => canonicalize(request), opts),
  );
  hashRows.both = add(
    'hash',
    'sha256(canonicalize(request))',
    measure(() => sha256(canonicalize(request)), opts),
  );
  const hashInput = {
    tool: request.tool,
    args: request.args,
    kind: 'confirm',
    capability: { tool: request.tool, args: request.args },
    presentation: { tool: request.tool, args: request.args },
  };
  hashRows.approval = add(
    'hash',
    'approvalHash (as decide builds it)',
    measure(() => approvalHash(hashInput), opts),
    `${Buffer.byteLength(canonicalize(hashInput))} B canonical`,
  );

  // ---- plan(): the rule index ------------------------------------------------------------------------
  log('plan(): first lookup of a tool name (index miss, computed) vs a memoised hit');
  /** @type {Record<number, { missUs: number, hitUs: number }>} */
  const plan = {};
  for (const n of [100, 10_000]) {
    // A fresh set so the misses below do not evict the probes' plans used above.
    const set = buildPolicySet(sets[n].files, { env: null });
    const hitTool = sets[n].probes.exact;
    set.plan(hitTool);
    let k = 0;
    const nsCount = Math.max(5, Math.floor(n / 40));
    const miss = add(
      `plan ${n}`,
      'miss (new name, glob namespace)',
      measure(() => set.plan(`svc${k % nsCount}_op1_new${k++}`), { ...opts, batchUs: 200 }),
    );
    const hit = add(
      `plan ${n}`,
      'hit',
      measure(() => set.plan(hitTool), opts),
    );
    plan[n] = { missUs: miss.medianUs, hitUs: hit.medianUs };
  }

  guardsMicro(opts, add, log);

  // ---- the parts of one POST /decide --------------------------------------------------------------
  log('the parts of one POST /decide (what Gatehouse adds to Fastify), each alone');
  const parts = await requestParts(opts, add, payments);

  // The target is the median of decide() over a policy set: the mixed stream. Each request
  // shape alone is shown too; a require_approval answer also builds the approval descriptor and its
  // SHA-256 hash inside decide() (the answer carries it), which has its own target below.
  /** @type {(n: number, name: string) => Row} the rows named here were all added above */
  const row = (n, name) => /** @type {Row} */ (rows.find((r) => r.group === `decide ${n}` && r.name.startsWith(name)));
  /** @type {(n: number, target: number) => import('./lib/stats.mjs').Check[]} */
  const decideChecks = (n, target) => {
    const mixed = row(n, 'mixed stream');
    const shapes = Object.keys(sets[n].probes)
      .filter((shape) => shape !== 'confirm')
      .map((shape) => row(n, shape));
    const worstShape = Math.max(...shapes.map((r) => r.medianUs));
    const confirm = row(n, 'confirm');
    const hashUs = /** @type {Measured} */ (/** @type {GeneratedSet} */ (sets[n]).confirmHash).medianUs;
    const at = `at ${n.toLocaleString('en-US')} rules`;
    return [
      {
        target: `decide() median ≤ ${target} µs ${at}: a mixed stream over every tool`,
        value: `${fmt(mixed.medianUs, 3)} µs (${mixed.extra})`,
        met: mixed.medianUs <= target,
      },
      {
        target: `decide() median ≤ ${target} µs ${at}: each allow/deny/default shape alone, worst`,
        value: `${fmt(worstShape, 3)} µs`,
        met: worstShape <= target,
      },
      {
        target: `decide() ${at}: a require_approval answer alone (its approval hash alone: ${fmt(hashUs, 3)} µs)`,
        value: `${fmt(confirm.medianUs, 3)} µs`,
        met: null,
      },
    ];
  };
  const checks = [
    ...decideChecks(100, TARGETS.decide100MedianUs),
    ...decideChecks(10_000, TARGETS.decide10kMedianUs),
    {
      target: `decide() median ≤ ${TARGETS.language100MedianUs} µs at 100 rules written with string operators, built-ins and roots: a mixed stream`,
      value: `${fmt(language.mixed.medianUs, 3)} µs (${language.conditions} conditions; the plain set's ${sets[100].conditions}: ${fmt(language.mixed.medianUs / row(100, 'mixed stream').medianUs)}x its stream)`,
      met: language.mixed.medianUs <= TARGETS.language100MedianUs,
    },
    {
      target: `argv() and path() on a 1 KiB argument ≤ ${TARGETS.builtin1KiBUs} µs`,
      value: `argv ${fmt(language.argv.medianUs, 3)} µs, path ${fmt(language.path.medianUs, 3)} µs`,
      met: Math.max(language.argv.medianUs, language.path.medianUs) <= TARGETS.builtin1KiBUs,
    },
    {
      target: `canonical + SHA-256 of a 300-byte request ≤ ${TARGETS.hashUs} µs`,
      value: `${fmt(hashRows.both.medianUs, 3)} µs`,
      met: hashRows.both.medianUs <= TARGETS.hashUs,
    },
    {
      target: `strict parse ≤ ${TARGETS.parseRatio}× JSON.parse (300 B)`,
      value: `${fmt(parse['300 B'].ratio)}x`,
      met: parse['300 B'].ratio <= TARGETS.parseRatio,
    },
    {
      target: `strict parse ≤ ${TARGETS.parseRatio}× JSON.parse (100 KB)`,
      value: `${fmt(parse['100 KB'].ratio)}x`,
      met: parse['100 KB'].ratio <= TARGETS.parseRatio,
    },
  ];
  return { rows, parse, plan, parts, checks, loadMs: { 100: sets[100].loadMs, 10000: sets[10_000].loadMs } };
}

/**
 * The pii guard's scan (one walk over the arguments, every detector on each string): the benchmark
 * body's arguments (nothing found: the common case), the 100 KB body's (non-ASCII titles, so each is
 * folded and scanned again), and 1 KiB of prose with a card number at its end.
 */
/**
 * @param {Parameters<typeof measure>[1]} opts
 * @param {Add} add
 * @param {(line: string) => void} log
 */
function guardsMicro(opts, add, log) {
  log("runGuard('pii'): one scan of a request's arguments");
  const small = DECIDE_BODY.args;
  add(
    'guard pii',
    `the /decide body's args (${JSON.stringify(small).length} B)`,
    measure(() => runGuard('pii', small), opts),
    `→ ${runGuard('pii', small)?.kind ?? 'nothing'}`,
  );
  const large = /** @type {import('../dist/json/value.js').JsonObject} */ (largeBody().args);
  add(
    'guard pii',
    `the 100 KB body's args (${JSON.stringify(large).length} B)`,
    measure(() => runGuard('pii', large), opts),
    `→ ${runGuard('pii', large)?.kind ?? 'nothing'}`,
  );
  let prose = 'Customer wrote:';
  for (let k = 0; prose.length < 1000; k++)
    prose += ` order A-2024-${100000 + k} arrived on 2024-05-${10 + (k % 20)} at 10:${10 + (k % 50)},`;
  const tail = { note: `${prose.slice(0, 1000)} card 4111 1111 1111 1111` };
  add(
    'guard pii',
    `1 KiB of prose, a card at its end`,
    measure(() => runGuard('pii', tail), opts),
    `→ ${runGuard('pii', tail)?.kind ?? 'nothing'}`,
  );
}

/**
 * Each step of the /decide handler path on its own, with the objects the server uses: the
 * authenticator (token cached, and a new token each time), the strict parse, the body schema, decide,
 * the response body serialized as Fastify does without a response schema (JSON.stringify) and with
 * one (fast-json-stringify), the decision log line (pino at info, to /dev/null: through src/log.ts as
 * src/service.ts, and through pino's own destinations), the metrics, the decision id.
 * @param {Parameters<typeof measure>[1]} opts
 * @param {Add} add
 * @param {import('../dist/policy/model.js').PolicySet} payments
 */
async function requestParts(opts, add, payments) {
  const { randomUUID } = await import('node:crypto');
  const { default: pino } = await import('pino');
  const { closeSync, openSync } = await import('node:fs');
  const { createLogger } = await import('../dist/log.js');
  // Fastify's own serializer (a dependency of fastify, not of Gatehouse): skipped if not installed flat.
  const fjs = await import('fast-json-stringify').then(
    (m) => m.default,
    () => null,
  );
  const { buildApp } = await import('../dist/http/app.js');
  const auth = await import('../dist/http/auth.js');
  const { createMetrics } = await import('../dist/engine/metrics.js');
  const { createEngine } = await import('../dist/engine/index.js');
  const { createStrictAjv } = await import('../dist/policy/ajv.js');
  const routes = { ...(await import('../dist/http/routes/decide.js')), ...(await import('../dist/engine/answer.js')) };
  const { toDecideRequest } = await import('../dist/policy/request.js');
  const { SECRET, signToken } = await import('./lib/bodies.mjs');

  /** @type {import('../dist/policy/live.js').LivePolicies} */
  const live = {
    dir: 'policies',
    current: () => payments,
    loadedAt: () => new Date(),
    lastFailure: () => null,
    reload: async () => ({ ok: true }),
  };
  const metrics = createMetrics(live);
  /** @type {import('../dist/http/auth.js').AuthOptions} */
  const authOptions = {
    key: SECRET,
    algorithm: 'HS256',
    issuer: null,
    audience: null,
    clockToleranceSec: 30,
    maxLifetimeSec: 86_400,
    claims: { team: 'team', agent: 'agent', roles: 'roles' },
  };
  const app = await buildApp(
    {
      engine: createEngine({
        policies: live,
        shadow: null,
        approvals: null,
        limits: null,
        keys: null,
        records: null,
        metrics,
        log: pino({ level: 'silent' }),
        logArgs: false,
      }),
      adminRole: 'admin',
      approverRole: 'approver',
      runtimeRole: 'runtime',
      policyReaderRoles: ['admin', 'approver'],
      usage: loadConfig({}).usage,
    },
    { bodyLimit: 1_048_576, connections: loadConfig({}).connections, auth: authOptions },
  );
  await app.ready();
  /** @type {Record<string, number>} */
  const out = {};
  /** @type {(name: string, fn: (i: number) => unknown) => number} */
  const part = (name, fn) => (out[name] = add('/decide parts', name, measure(fn, opts)).medianUs);

  const token = signToken();
  // A stand-in for Fastify's request with only what the authenticator reads.
  const fakeRequest = (/** @type {string} */ t) =>
    /** @type {import('fastify').FastifyRequest} */ (
      /** @type {unknown} */ ({
        headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
        raw: { rawHeaders: ['authorization', `Bearer ${t}`, 'content-type', 'application/json'] },
        identity: null,
      })
    );
  if (typeof auth.createAuthenticator === 'function') {
    const authenticate = auth.createAuthenticator(app, authOptions);
    const same = fakeRequest(token);
    part('authenticate, token seen before', () => authenticate(same));
    const fresh = Array.from({ length: 30_000 }, (_, k) => fakeRequest(signToken({ jti: `t${k}` }))); // more than any cache holds
    part('authenticate, a new token each time', (i) => authenticate(fresh[i % fresh.length]));
  }
  part('app.jwt.verify (fast-jwt HS256, uncached)', () => app.jwt.verify(token));
  const bytes = Buffer.from(DECIDE_TEXT);
  part('parseJson of the 300-byte body', () => parseJson(bytes));
  const validate = createStrictAjv(false).compile(routes.decideBodySchema);
  const body = parseJson(bytes);
  part('body schema (ajv)', () => validate(body));
  const req = toDecideRequest(
    /** @type {import('../dist/policy/request.js').ToolCall} */ (/** @type {unknown} */ (body)),
  ); // the schema above accepts it
  part('decide() over the example policies', () => decide(payments, req, IDENTITY));
  const result = decide(payments, req, IDENTITY);
  part('randomUUID()', () => randomUUID());
  part('metrics: counter + histogram', () => {
    metrics.decisions.inc({ decision: result.decision, rule: result.rule });
    metrics.decideSeconds.observe(0.000002);
  });
  const id = randomUUID();
  part('response: decisionBody + JSON.stringify', () => JSON.stringify(routes.decisionBody(result, id)));
  if (fjs) {
    // A build that exports its response schema is measured with it; otherwise with the copy below.
    const stringify = fjs(
      /** @type {{ decisionResponseSchema?: object }} */ (routes).decisionResponseSchema ?? DECISION_RESPONSE_SCHEMA,
    );
    part('response: decisionBody + fast-json-stringify', () => stringify(routes.decisionBody(result, id)));
  }
  // The decision log line to /dev/null: through src/log.ts as src/service.ts writes it (synchronous), and
  // through pino's own destinations for comparison.
  const line = (/** @type {import('pino').Logger} */ logger) =>
    logger.info(
      {
        decision_id: id,
        tool: req.tool,
        decision: result.decision,
        rule: result.rule,
        policies: result.policies.map((p) => p.digest),
        user: IDENTITY.user,
        team: IDENTITY.team,
        agent: IDENTITY.agent,
        duration_us: 1.7,
      },
      'decision',
    );
  const devNull = openSync('/dev/null', 'w');
  const ours = createLogger('info', devNull).child({ reqId: 'req-1' });
  part('decision log line (src/log.ts, synchronous)', () => line(ours));
  for (const sync of [true, false]) {
    const dest = pino.destination({ dest: '/dev/null', sync });
    const logger = pino({ level: 'info', base: { service: 'gatehouse' } }, dest).child({ reqId: 'req-1' });
    part(`decision log line (pino.destination, sync: ${sync})`, () => line(logger));
    if (sync) dest.flushSync();
    else await new Promise((/** @type {(v?: unknown) => void} */ resolve) => dest.flush(() => resolve()));
  }
  closeSync(devNull);
  await app.close();
  return out;
}

// The /decide response, for fast-json-stringify (used when dist/ does not export its own).
const POLICY_IDENTITY = {
  type: 'object',
  required: ['policy', 'digest'],
  properties: { policy: { type: 'string' }, version: { type: 'string' }, digest: { type: 'string' } },
};
const DECISION_RESPONSE_SCHEMA = {
  type: 'object',
  required: ['decision', 'reason', 'rule', 'policies', 'message', 'decision_id'],
  properties: {
    decision: { type: 'string' },
    reason: { type: 'string' },
    rule: { type: 'string' },
    policies: { type: 'array', items: POLICY_IDENTITY },
    approval: {
      type: 'object',
      required: ['kind', 'capability', 'presentation', 'hash'],
      properties: {
        kind: { type: 'string' },
        capability: { type: 'object', additionalProperties: true },
        presentation: { type: 'object', additionalProperties: true },
        hash: { type: 'string' },
        id: { type: 'string' },
        status: { type: 'string' },
      },
    },
    message: { type: 'string' },
    decision_id: { type: 'string' },
  },
};

/**
 * @param {{ rows: Row[], checks: import('./lib/stats.mjs').Check[] }} result
 * @param {(text: string) => void} [print]
 */
export function printMicro(result, print = console.log) {
  print('\nMicro-benchmarks (µs per op; median and p99 over batch samples of all runs)');
  print(
    table(
      ['group', 'op', 'median µs', 'p99 µs', 'ops/s', 'note'],
      result.rows.map((r) => [r.group, r.name, fmt(r.medianUs, 3), fmt(r.p99Us, 3), fmtInt(r.opsPerSec), r.extra]),
    ),
  );
  print('\nTargets');
  print(targetsTable(result.checks));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = parseArgs();
  if (args.extra.guards) {
    const { rows, add } = collector(console.log);
    guardsMicro(measureOptions(args.quick), add, console.log);
    printMicro({ rows, checks: [] });
    process.exit(0);
  }
  const result = await runMicro({ quick: args.quick });
  printMicro(result);
  if (args.json) (await import('node:fs')).writeFileSync(args.json, JSON.stringify(result, null, 2));
}
