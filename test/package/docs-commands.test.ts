// Every command line in the repository runs this package and no other. The npm package named
// `gatehouse` is another project's: npx given that bare name, outside a project with ours installed
// (an MCP client's or a hook's start, with GATEHOUSE_TOKEN in the environment), fetches and runs it.
// So a runner (npx, npm exec, pnpm dlx, yarn dlx, bunx) names `gatehouse-pdp@<package.json version>`,
// a configuration's `command` is that or a path, and an import names this package's exports.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  exports: Record<string, unknown>;
};

const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.data', 'coverage']);
const TEXT = /\.(md|ts|mts|mjs|js|json|ya?ml|toml|sh|txt|html)$|^(Dockerfile|run)$/;

/** The repository's text files (docs, policies, src and its help texts, tests, scripts, CI), as paths relative to ROOT. */
function textFiles(dir = ROOT): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) out.push(...textFiles(join(dir, entry.name)));
    } else if (TEXT.test(entry.name) && entry.name !== 'package-lock.json') {
      out.push(relative(ROOT, join(dir, entry.name)));
    }
  }
  return out;
}

const RUNNER = String.raw`\b(?:npx|npm\s+exec|pnpm\s+(?:dlx|exec)|yarn\s+dlx|bunx)\s+(?:-{1,2}[\w-]+(?:=\S+)?\s+)*`;
/** What may not appear, each with why. */
const RULES: { why: string; pattern: RegExp }[] = [
  {
    why: 'a runner given the bare name gatehouse (another project’s package)',
    pattern: new RegExp(`${RUNNER}gatehouse(?![\\w-])`, 'g'),
  },
  {
    why: 'an MCP configuration running npx with the bare name gatehouse',
    pattern: /"command"\s*:\s*"(?:npx|bunx)"\s*,\s*"args"\s*:\s*\[\s*(?:"-[^"]*"\s*,\s*)*"gatehouse(?:@[^"]*)?"/g,
  },
  { why: 'a runner given this package without its version', pattern: new RegExp(`${RUNNER}gatehouse-pdp(?!@)`, 'g') },
  {
    why: 'an MCP configuration naming this package without its version',
    pattern: /"args"\s*:\s*\[[^\]]*"gatehouse-pdp"/g,
  },
  {
    why: 'a configuration command that is the bare command name (a PATH lookup, which may find nothing)',
    pattern: /"command"\s*:\s*"gatehouse[\s"]/g,
  },
];

function findings(text: string): string[] {
  const found: string[] = [];
  for (const { why, pattern } of RULES) for (const m of text.matchAll(pattern)) found.push(`${why}: ${m[0]}`);
  for (const m of text.matchAll(/gatehouse-pdp@([\w.+-]*\w)/g)) {
    if (m[1] !== manifest.version)
      found.push(`gatehouse-pdp@${m[1]}, not the version of package.json (${manifest.version})`);
  }
  for (const m of text.matchAll(/(?:from\s+|import\(\s*)['"](gatehouse[\w-]*)(\/[\w-]+)?['"]/g)) {
    if (m[1] !== manifest.name || !Object.hasOwn(manifest.exports, `.${m[2] ?? ''}`))
      found.push(`an import of ${m[1]}${m[2] ?? ''}, which this package does not export`);
  }
  return found;
}

describe('command lines in the repository', () => {
  it('the rules catch what they are for (the bad lines are built here, not written)', () => {
    const bare = ['npx', 'gatehouse'].join(' ');
    expect(findings(`${bare} mcp-proxy`)).toHaveLength(1);
    expect(findings(`npx -y ${'gatehouse'}@latest hook claude-code`)).toHaveLength(1);
    expect(findings(`npm exec -- ${'gatehouse'} check`)).toHaveLength(1);
    expect(findings(`{"command": "npx", "args": ["-y", "${'gatehouse'}", "mcp-proxy"]}`)).toHaveLength(1);
    expect(findings(`{"type": "command", "command": "${'gatehouse'} hook claude-code"}`)).toHaveLength(1);
    expect(findings(`npx -y ${manifest.name} hook claude-code`)).toHaveLength(1);
    expect(findings(`npx -y ${manifest.name}@0.0.1 hook claude-code`)).toHaveLength(1);
    expect(findings(`import { createClient } from '${'gatehouse'}/client';`)).toHaveLength(1);
    expect(findings(`import { createClient } from '${manifest.name}/nope';`)).toHaveLength(1);
    // What the docs write.
    expect(findings(`npx -y ${manifest.name}@${manifest.version} hook claude-code`)).toEqual([]);
    expect(findings(`{"command": "npx", "args": ["-y", "${manifest.name}@${manifest.version}", "mcp-proxy"]}`)).toEqual(
      [],
    );
    expect(findings(`"command": "/usr/local/bin/gatehouse hook claude-code"`)).toEqual([]);
    expect(findings(`import { gateTools } from '${manifest.name}/ai-sdk';`)).toEqual([]);
    expect(findings('$ gatehouse check policies --env prod')).toEqual([]);
  });

  it('README, docs, policies, src help texts, tests and scripts run only this package', () => {
    const files = textFiles();
    // The walk reaches what it must.
    for (const f of [
      'README.md',
      'docs/cli.md',
      'docs/mcp.md',
      'docs/claude-code.md',
      'src/service.ts',
      'src/cli/token.ts',
      'Dockerfile',
    ]) {
      expect(files).toContain(f);
    }
    const problems = files.flatMap((f) => findings(readFileSync(join(ROOT, f), 'utf8')).map((p) => `${f}: ${p}`));
    expect(problems).toEqual([]);
  });

  it('the package is not the registry’s other `gatehouse`, and keeps the `gatehouse` command', () => {
    expect(manifest.name).not.toBe('gatehouse');
    const bin = (manifest as unknown as { bin: Record<string, string> }).bin;
    expect(Object.keys(bin)).toEqual(['gatehouse']);
  });
});
