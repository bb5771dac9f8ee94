// A plain-text table, columns padded to their widest cell, as `test` and `replay` print them.
export function table(head: string[], rows: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    `${cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd()}\n`;
  return line(head) + line(widths.map((w) => '-'.repeat(w))) + rows.map(line).join('');
}
