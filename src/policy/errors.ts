// Load errors: every problem of every file is collected, then reported sorted, one line each:
// `file:line:column: key.path: what is wrong`. A message never quotes an offending value.

export interface LoadProblem {
  file: string;
  line: number;
  column: number;
  /** Dotted key path inside the file (`rules.2.when`); empty for the whole file. */
  key: string;
  message: string;
}

export function formatProblem(p: LoadProblem): string {
  return `${p.file}:${p.line}:${p.column}: ${p.key || '(file)'}: ${p.message}`;
}

export function sortProblems(problems: LoadProblem[]): LoadProblem[] {
  return problems.sort(
    (a, b) =>
      cmp(a.file, b.file) || a.line - b.line || a.column - b.column || cmp(a.key, b.key) || cmp(a.message, b.message),
  );
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Thrown by loadPolicies when any file has any problem: the whole load fails (fail closed). */
export class PolicyLoadError extends Error {
  readonly problems: readonly LoadProblem[];
  constructor(problems: LoadProblem[]) {
    const sorted = sortProblems(problems);
    super(`policy load failed with ${sorted.length} problem(s):\n${sorted.map(formatProblem).join('\n')}`);
    this.name = 'PolicyLoadError';
    this.problems = sorted;
  }
}
