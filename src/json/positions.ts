// Index → line and column for policy-file error messages. Lines end at LF, CRLF or a lone CR; columns
// count UTF-16 code units (what editors using JS strings show), both 1-based.

export interface Position {
  line: number;
  column: number;
}

/** Index of the first character of every line. */
export function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) starts.push(i + 1);
    else if (c === 0x0d && text.charCodeAt(i + 1) !== 0x0a) starts.push(i + 1);
  }
  return starts;
}

export function positionAt(starts: readonly number[], index: number): Position {
  // Binary search for the last line start <= index.
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((starts[mid] ?? 0) <= index) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, column: index - (starts[lo] ?? 0) + 1 };
}
