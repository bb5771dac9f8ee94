// What an operator changed when granting a call amended (docs/spec.md section 5.4, "Amend and grant"):
// the argument paths that differ, and the line every adapter gives the model, so it knows the tool
// ran with other arguments than it chose.

/** A call run with arguments an operator amended: the arguments, and the paths that changed. */
export interface Amended {
  args: Record<string, unknown>;
  /** Dot-separated argument paths (array items by index), sorted: added, removed or changed. */
  paths: string[];
}

/** The paths where `after` differs from `before`: objects and arrays compared member by member. */
export function changedPaths(before: unknown, after: unknown): string[] {
  const out: string[] = [];
  walk(before, after, '', out);
  return out.sort();
}

function walk(a: unknown, b: unknown, path: string, out: string[]): void {
  if (isRecord(a) && isRecord(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)]))
      walk(a[key], b[key], path === '' ? key : `${path}.${key}`, out);
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) walk(a[i], b[i], path === '' ? `${i}` : `${path}.${i}`, out);
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push(path === '' ? '(all)' : path);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The line for the model: the call ran amended, and which arguments the operator changed. */
export function amendedNote(tool: string, amended: Amended): string {
  const paths = amended.paths.length === 0 ? 'none' : amended.paths.join(', ');
  return `An operator amended this "${tool}" call before approving it; it ran with the amended arguments (changed: ${paths}). Do not repeat the original call.`;
}
