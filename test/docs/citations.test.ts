// Citations a cloner follows must lead somewhere: every "spec section N" (docs/spec.md section N,
// spec N.N, sections N and M) in src/, test/, docs/, openapi.yaml and README.md names a numbered
// heading of docs/spec.md, and so does every bare "section N" inside docs/spec.md itself; every
// relative Markdown link (`[x](file.md#anchor)`, `[x](#anchor)`) in docs/, README.md and
// openapi.yaml, and every `docs/<file>.md#<anchor>` written out anywhere of those, names a file that
// exists and a heading in it, by GitHub's anchor rules.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.data', 'coverage']);
const TEXT = /\.(md|ts|mts|mjs|js|ya?ml|json|html|css|sql|sh)$/;

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) out.push(...filesUnder(path));
    } else if (TEXT.test(entry.name)) {
      out.push(path);
    }
  }
  return out;
}

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

/** Where citations of the spec may be: the code, the tests, the documents. */
const CITING = [...filesUnder('src'), ...filesUnder('test'), ...filesUnder('docs'), 'openapi.yaml', 'README.md'];
/** Where links are: the documents. */
const LINKING = [...filesUnder('docs').filter((f) => f.endsWith('.md')), 'README.md', 'openapi.yaml'];

// ---- headings and GitHub's anchors ---------------------------------------------------------------------

/** The headings of a Markdown text, outside fenced code blocks. */
function headings(text: string): string[] {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const f = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (f !== undefined) {
      if (fence === undefined) fence = f[0]!;
      else if (f[0] === fence) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) out.push(h[1]!);
  }
  return out;
}

/**
 * GitHub's anchor of a heading: its text as rendered (links to their text, no code or emphasis marks),
 * lowercased, every character but letters, digits, `-`, `_` and spaces dropped, spaces to `-`; a
 * repeated anchor gets `-1`, `-2`, … in order.
 */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const heading of headings(text)) {
    const rendered = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const base = rendered
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

const SPEC = read('docs/spec.md');
/** The numbers of docs/spec.md's numbered headings (`## 5.`, `### 5.4`, `#### 5.4.1`). */
const SPEC_SECTIONS = new Set(
  headings(SPEC)
    .map((h) => /^(\d+(?:\.\d+)*)\.?\s/.exec(h)?.[1])
    .filter((n): n is string => n !== undefined),
);

// ---- reading citations across line breaks and comment markers ------------------------------------------

/** A text as one line (comment markers at line starts dropped), and the original line of each offset. */
function joined(text: string): { flat: string; lineAt: (offset: number) => number } {
  const starts: number[] = [];
  let flat = '';
  for (const line of text.split('\n')) {
    starts.push(flat.length);
    flat += `${line.replace(/^\s*(?:\/\/+|\/?\*+|#+)?\s*/, '')} `;
  }
  const lineAt = (offset: number): number => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  return { flat, lineAt };
}

const NUMBER = String.raw`\d+(?:\.\d+)*`;
const LIST = String.raw`${NUMBER}(?:\s*(?:,\s*and|,\s*or|,|and|or)\s*${NUMBER})*`;
/** "docs/spec.md section 5.3", "spec.md, sections 2 and 4", "spec section 5.4", "spec §4.3". */
const SPEC_CITATION = new RegExp(String.raw`\b(?:docs/)?spec(?:\.md)?,?\s+(?:sections?\s+|§\s*)(${LIST})`, 'gi');
/** The short form "spec 5.3", "spec 5.3, 5.4": a dotted number, so "spec 2 files" is not one. */
const SHORT_CITATION = /\bspec\s+(\d+\.\d+(?:\.\d+)*(?:\s*,\s*\d+\.\d+(?:\.\d+)*)*)/g;
/** Inside docs/spec.md: "section 5.3", "sections 2.7 and 2.9", but not another document's ("RFC 8785 section 3.2.2.2"). */
const OWN_CITATION = new RegExp(String.raw`(?<!RFC \d+,? )\bsections?\s+(${LIST})`, 'gi');

interface Finding {
  where: string;
  text: string;
}

function citations(file: string): (Finding & { sections: string[] })[] {
  const { flat, lineAt } = joined(read(file));
  const patterns =
    file === 'docs/spec.md' ? [SPEC_CITATION, SHORT_CITATION, OWN_CITATION] : [SPEC_CITATION, SHORT_CITATION];
  const out: (Finding & { sections: string[] })[] = [];
  for (const pattern of patterns) {
    for (const m of flat.matchAll(pattern)) {
      const sections = m[1]!.match(/\d+(?:\.\d+)*/g) ?? [];
      out.push({ where: `${file}:${lineAt(m.index)}`, text: m[0].trim(), sections });
    }
  }
  return out;
}

// ---- links ---------------------------------------------------------------------------------------------

interface Link extends Finding {
  /** The file linked to, relative to the repository. */
  target: string;
  anchor: string | undefined;
}

function links(file: string): Link[] {
  const text = read(file);
  const out: Link[] = [];
  const lineOf = (index: number): number => text.slice(0, index).split('\n').length;
  // Markdown links, relative to the file: `[text](other.md#anchor)`, `[text](#anchor)`, `[text](../X.md)`.
  for (const m of text.matchAll(/\]\(((?:[^)\s#:]*\.md)?)(?:#([^)\s]*))?\)/g)) {
    const [, path, anchor] = m;
    if (path === '' && anchor === undefined) continue;
    const target = path === '' ? file : normalize(join(dirname(file), path!));
    out.push({ where: `${file}:${lineOf(m.index)}`, text: m[0], target, anchor });
  }
  // Written out in prose or code: `docs/approvals.md#the-operator-page`, from the repository's root.
  for (const m of text.matchAll(/(?<![\w/.(-])(docs\/[\w./-]+\.md)#([\w-]+)/g)) {
    out.push({ where: `${file}:${lineOf(m.index)}`, text: m[0], target: m[1]!, anchor: m[2] });
  }
  return out;
}

const anchorsCache = new Map<string, Set<string>>();
function anchorsIn(file: string): Set<string> {
  let anchors = anchorsCache.get(file);
  if (anchors === undefined) {
    anchors = anchorsOf(read(file));
    anchorsCache.set(file, anchors);
  }
  return anchors;
}

function broken(link: Link): string | undefined {
  const path = join(ROOT, link.target);
  if (relative(ROOT, path).startsWith('..')) return 'outside the repository';
  if (!existsSync(path) || !statSync(path).isFile()) return `${link.target} does not exist`;
  if (link.anchor === undefined || link.anchor === '') return undefined;
  return anchorsIn(link.target).has(decodeURIComponent(link.anchor))
    ? undefined
    : `${link.target} has no heading #${link.anchor}`;
}

/** `docs/operations.md "Logs"`, `docs/client.md, "One approval per call per run"`: a file and a part of it, by its title. */
function titled(file: string): (Finding & { target: string; title: string })[] {
  const { flat, lineAt } = joined(read(file));
  return [...flat.matchAll(/(?<![\w/.-])((?:docs\/)?[\w-]+\.md),?\s+"([^"]{2,100})"/g)].map((m) => ({
    where: `${file}:${lineAt(m.index)}`,
    text: m[0],
    target: m[1]!.startsWith('docs/') || m[1] === 'README.md' || m[1] === 'BENCHMARKS.md' ? m[1]! : `docs/${m[1]}`,
    title: m[2]!,
  }));
}

/** Whether `title` names a heading of the file, or a bold lead of a paragraph or list item (`**Title.**`). */
function hasPart(file: string, title: string): boolean {
  const text = read(file);
  const wanted = title.toLowerCase();
  const rendered = (h: string): string =>
    h
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[`*_]/g, '')
      .toLowerCase();
  return headings(text).some((h) => rendered(h) === wanted) || text.toLowerCase().includes(`**${wanted}`);
}

// ---- the checks ----------------------------------------------------------------------------------------

describe('citations of docs/spec.md name its numbered headings', () => {
  it('docs/spec.md has numbered headings to cite', () => {
    expect([...SPEC_SECTIONS]).toEqual(expect.arrayContaining(['1', '2.9', '4.1', '5.3', '5.4.1', '6.4']));
  });

  it('every citation in src/, test/, docs/, openapi.yaml and README.md resolves', () => {
    const all = CITING.flatMap(citations);
    expect(all.length).toBeGreaterThan(200);
    const unresolved = all.flatMap((c) =>
      c.sections.filter((n) => !SPEC_SECTIONS.has(n)).map((n) => `${c.where}: "${c.text}": no section ${n}`),
    );
    expect(unresolved).toEqual([]);
  });
});

describe('links to documents name a file and a heading in it', () => {
  it('every relative link and written-out docs/….md#anchor in docs/, README.md and openapi.yaml resolves', () => {
    const all = LINKING.flatMap(links);
    expect(all.length).toBeGreaterThan(50);
    const bad = all.flatMap((l) => {
      const why = broken(l);
      return why === undefined ? [] : [`${l.where}: ${l.text}: ${why}`];
    });
    expect(bad).toEqual([]);
  });

  it('every docs/….md#anchor written in src/ and test/ resolves', () => {
    const all = [...filesUnder('src'), ...filesUnder('test')].flatMap((f) =>
      links(f).filter((l) => l.target.startsWith('docs/') && !l.text.startsWith(']')),
    );
    const bad = all.flatMap((l) => {
      const why = broken(l);
      return why === undefined ? [] : [`${l.where}: ${l.text}: ${why}`];
    });
    expect(bad).toEqual([]);
  });
});

describe('citations of a document by a title name a part of it', () => {
  it('every `<file>.md, "<title>"` in src/, test/, docs/, openapi.yaml and README.md names a heading or a bold lead of that file', () => {
    const all = CITING.flatMap(titled);
    expect(all.length).toBeGreaterThan(20);
    const bad = all.flatMap((c) => {
      if (!existsSync(join(ROOT, c.target))) return [`${c.where}: ${c.text}: ${c.target} does not exist`];
      return hasPart(c.target, c.title) ? [] : [`${c.where}: ${c.text}: ${c.target} has no part titled so`];
    });
    expect(bad).toEqual([]);
  });
});

describe("the checks' own rules", () => {
  it("anchors follow GitHub's: punctuation dropped, spaces to -, repeats numbered", () => {
    const text = [
      '# 5.3 `POST /decide`',
      '## The Claude Code hook',
      '### Budgets and rate limits',
      '### Budgets and rate limits',
      '## [Linked](x.md) heading_name',
      '```yaml',
      '# not a heading',
      '```',
      '## Ünïcode: ok?',
    ].join('\n');
    expect([...anchorsOf(text)]).toEqual([
      '53-post-decide',
      'the-claude-code-hook',
      'budgets-and-rate-limits',
      'budgets-and-rate-limits-1',
      'linked-heading_name',
      'ünïcode-ok',
    ]);
  });

  it('citations are read across line breaks and comment markers, lists included', () => {
    const sample = (text: string) => [...joined(text).flat.matchAll(SPEC_CITATION)].map((m) => m[1]);
    expect(sample('// see docs/spec.md\n// section 5.3, and')).toEqual(['5.3']);
    expect(sample(' * spec.md, sections 2.7 and 2.9')).toEqual(['2.7 and 2.9']);
    expect([...'spec 5.3, 5.4 and spec 2 files'.matchAll(SHORT_CITATION)].map((m) => m[1])).toEqual(['5.3, 5.4']);
    expect([...'as RFC 8785 section 3.2.2.2 says (section 4.1)'.matchAll(OWN_CITATION)].map((m) => m[1])).toEqual([
      '4.1',
    ]);
  });
});
