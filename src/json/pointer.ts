// RFC 6901 JSON Pointer: "~" is written "~0" and "/" is written "~1" (in that order, so "~1" in a key
// round-trips). The empty pointer "" is the whole document.

export function jsonPointer(segments: readonly (string | number)[]): string {
  let out = '';
  for (const segment of segments) out += '/' + escapePointerSegment(String(segment));
  return out;
}

export function escapePointerSegment(segment: string): string {
  if (segment.indexOf('~') === -1 && segment.indexOf('/') === -1) return segment;
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The unescaped segments of a pointer ("" → []). */
export function pointerSegments(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}
