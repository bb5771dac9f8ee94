// BENCHMARKS.md holds how to run the benchmarks, their method and the latest table; the history,
// the single runs and the explanations live in docs/performance.md. This keeps it short, and keeps
// every link into either file pointing at a heading that exists (the two are split by hand).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** GitHub's anchors of a Markdown file's headings: lowercased, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  for (const line of markdown.split('\n')) {
    const heading = /^#{1,6}\s+(.*)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    let slug = base;
    for (let n = 1; out.has(slug); n++) slug = `${base}-${n}`;
    out.add(slug);
  }
  return out;
}

describe('BENCHMARKS.md', () => {
  it('keeps to at most 250 lines (the method and the latest table; the rest is in docs/performance.md)', () => {
    const lines = read('BENCHMARKS.md').split('\n').length;
    expect(lines).toBeLessThanOrEqual(250);
  });

  it('every link into BENCHMARKS.md or docs/performance.md names a heading that exists', () => {
    const targets = {
      'BENCHMARKS.md': anchors(read('BENCHMARKS.md')),
      'docs/performance.md': anchors(read('docs/performance.md')),
    };
    const sources = [
      'README.md',
      'BENCHMARKS.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => `docs/${f}`),
    ];
    const broken: string[] = [];
    let checked = 0;
    for (const source of sources) {
      const text = read(source);
      for (const m of text.matchAll(/\]\(([^)\s#]*)#([^)\s]+)\)/g)) {
        const [, file = '', anchor = ''] = m;
        // A link resolved from the source's folder; an empty path is the source itself.
        const resolved =
          file === '' ? source : join(source.includes('/') ? 'docs' : '', file).replace(/^docs\/\.\.\//, '');
        if (!(resolved in targets)) continue;
        checked++;
        if (!targets[resolved as keyof typeof targets].has(anchor))
          broken.push(`${source}: ${file || '(itself)'}#${anchor}`);
      }
    }
    expect(checked).toBeGreaterThan(5);
    expect(broken).toEqual([]);
  });
});
