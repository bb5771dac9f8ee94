// Load a policy directory (or one file) into a PolicySet: read every file, compile each, then the
// cross-file checks (one identity per policy, one catalogue entry per tool name, unique rule ids).
// Any problem anywhere fails the whole load: a partial policy set is never served.
import type { Stats } from 'node:fs';
import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, isAbsolute, join, relative, sep } from 'node:path';
import { isJsonObject } from '../json/value.js';
import { createArgsAjv } from './ajv.js';
import { compilePolicyFile } from './compile.js';
import { PolicyLoadError, type LoadProblem } from './errors.js';
import type { PolicyFile, PolicySet } from './model.js';
import { createPolicySet } from './plan.js';
import { schemaProblems } from './schema-check.js';
import { MAX_FILE_BYTES, type KeyPath, type PolicySource } from './source/common.js';
import { formatOf, readSource } from './source/read.js';

export interface LoadOptions {
  /** The active environment (POLICY_ENV); required when a file declares environments. */
  env?: string | null;
}

export interface FileBytes {
  path: string;
  bytes: Uint8Array;
}

/**
 * Policy test files (`*.test.yaml`, `*.test.yml`: docs/spec.md section 6) live beside policies but are not
 * policies. Exactly those: a `*.test.json` or `*.test.toml` is a policy file like any other, since
 * skipping it would silently drop its rules (`gatehouse test` does not read it either).
 */
export function isPolicyTestFileName(name: string): boolean {
  return !name.startsWith('.') && /\.test\.ya?ml$/i.test(name);
}

export function isPolicyFileName(name: string): boolean {
  return !name.startsWith('.') && formatOf(name) !== null && !isPolicyTestFileName(name);
}

/**
 * A file's name relative to the policy directory `target` (POLICY_DIR), as the service shows it: only
 * the files directly in the directory are read, so this is the file's name, and a `target` that is
 * one file is named by its file name too. Where the directory is on the host is nobody's business.
 */
export function policyFileName(target: string, file: string): string {
  const rel = relative(target, file);
  return rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel) ? basename(file) : rel;
}

/** Read a directory (its policy files, in file-name order) or a single file. Throws PolicyLoadError. */
export async function loadPolicies(target: string, options: LoadOptions = {}): Promise<PolicySet> {
  return buildPolicySet(await readPolicyFiles(target), options);
}

export async function readPolicyFiles(target: string): Promise<FileBytes[]> {
  const problem = (file: string, message: string): PolicyLoadError =>
    new PolicyLoadError([{ file, line: 1, column: 1, key: '', message }]);
  let info: Stats;
  try {
    info = await stat(target);
  } catch {
    throw problem(target, 'cannot read: no such file or directory');
  }
  if (!info.isDirectory()) {
    if (info.size > MAX_FILE_BYTES) throw problem(target, `file is larger than ${MAX_FILE_BYTES} bytes`);
    return [{ path: target, bytes: await readBytes(target, problem) }];
  }

  const root = await realpath(target);
  const names = (await readdir(target)).filter(isPolicyFileName).sort(byCodeUnits);
  const files: FileBytes[] = [];
  const problems: LoadProblem[] = [];
  for (const name of names) {
    const path = join(target, name);
    const link = await lstat(path).catch(() => null);
    if (link === null) {
      // Listed, then gone (a file replaced while the directory is read): this load fails, the next one sees it.
      problems.push({
        file: path,
        line: 1,
        column: 1,
        key: '',
        message: 'cannot read: the file changed while the directory was read',
      });
      continue;
    }
    if (link.isSymbolicLink()) {
      // Mounted config (e.g. a Kubernetes ConfigMap) is symlinks inside the directory; a link that
      // leads outside it is refused, so a policy directory cannot pull in arbitrary files.
      const real = await realpath(path).catch(() => null);
      const rel = real === null ? '..' : relative(root, real);
      if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
        problems.push({
          file: path,
          line: 1,
          column: 1,
          key: '',
          message: 'symbolic link leads outside the policy directory',
        });
        continue;
      }
    }
    const s = await stat(path).catch(() => null);
    if (!s?.isFile()) continue;
    // Checked before reading: a huge file is refused without being loaded into memory.
    if (s.size > MAX_FILE_BYTES) {
      problems.push({
        file: path,
        line: 1,
        column: 1,
        key: '',
        message: `file is larger than ${MAX_FILE_BYTES} bytes`,
      });
      continue;
    }
    try {
      files.push({ path, bytes: await readBytes(path, problem) });
    } catch (err) {
      if (!(err instanceof PolicyLoadError)) throw err;
      problems.push(...err.problems);
    }
  }
  if (problems.length > 0) throw new PolicyLoadError(problems);
  return files;
}

/** A file's bytes; an unreadable file (permissions, removed meanwhile) is a load problem, not a crash. */
async function readBytes(
  path: string,
  problem: (file: string, message: string) => PolicyLoadError,
): Promise<Uint8Array> {
  try {
    return await readFile(path);
  } catch {
    throw problem(path, 'cannot read the file');
  }
}

/** Compile file contents into a policy set (pure: no I/O). Throws PolicyLoadError with every problem. */
export function buildPolicySet(inputs: readonly FileBytes[], options: LoadOptions = {}): PolicySet {
  const env = options.env ?? null;
  const ajv = createArgsAjv(); // one per load: a reload drops the old set's compiled schemas with it
  const problems: LoadProblem[] = [];
  const files: { file: PolicyFile; source: PolicySource }[] = [];
  for (const input of [...inputs].sort((a, b) => byCodeUnits(basename(a.path), basename(b.path)))) {
    const read = readSource(input.path, input.bytes);
    problems.push(...read.problems);
    if (!read.source) continue;
    const compiled = compilePolicyFile(read.source, env, ajv);
    problems.push(...compiled.problems);
    if (compiled.file) files.push({ file: compiled.file, source: read.source });
  }
  problems.push(...crossFileProblems(files));
  problems.push(...schemaProblems(files, env));
  if (problems.length > 0) throw new PolicyLoadError(problems);
  return createPolicySet(
    files.map((f) => f.file),
    env,
  );
}

/**
 * What no single file can check: two files with the same `policy` name (whatever their versions: a
 * decision's `rule`, `<policy>#<i>` for a rule without an id, must name one file), one tool in two
 * catalogues, one rule id in two files. Each problem is placed where the later file writes it;
 * messages name the other file, not the value (the key path says which). The files of one load
 * share a directory: the other file is named by its file name, which GET /policies also shows.
 */
function crossFileProblems(files: readonly { file: PolicyFile; source: PolicySource }[]): LoadProblem[] {
  const problems: LoadProblem[] = [];
  const at = (source: PolicySource, path: KeyPath, message: string): void => {
    const { line, column } = source.locate(path);
    problems.push({ file: source.file, line, column, key: path.join('.'), message });
  };
  const policies = new Map<string, string>();
  const tools = new Map<string, string>();
  const ruleIds = new Map<string, string>();
  for (const { file, source } of files) {
    const name = basename(file.path);
    const first = policies.get(file.identity.policy);
    const written = isJsonObject(source.value) && Object.hasOwn(source.value, 'policy');
    if (first)
      at(
        source,
        ['policy'],
        `this policy name${written ? '' : ' (the file name, as `policy` is not given)'} is also used by ${first}`,
      );
    else policies.set(file.identity.policy, name);
    for (const entry of file.tools) {
      const other = tools.get(entry.pattern);
      if (other) at(source, ['tools', entry.pattern], `this tool is also in the catalogue of ${other}`);
      else tools.set(entry.pattern, name);
    }
    for (const rule of file.rules) {
      const other = ruleIds.get(rule.id);
      if (other && other !== name) at(source, ['rules', rule.index, 'id'], `this rule id is also used in ${other}`);
      else ruleIds.set(rule.id, name);
    }
    // A budget's or rate limit's id names its counters and the decisions it makes: one per set.
    for (const limit of [...file.budgets, ...file.rateLimits]) {
      const other = ruleIds.get(limit.id);
      const key = limit.type === 'budget' ? 'budgets' : 'rate_limits';
      if (other && other !== name)
        at(
          source,
          [key, limit.index, 'id'],
          `this id is also used in ${other} (rules, budgets and rate limits share one set of ids)`,
        );
      else ruleIds.set(limit.id, name);
    }
  }
  return problems;
}

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
