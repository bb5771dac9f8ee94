// UTF-16 / UTF-8 helpers. Everything except isWellFormed runs only on error paths, so it favours
// clarity over speed.

// String.prototype.isWellFormed is ES2024 (present in Node >= 20) but the repo's lib is ES2023.
interface WellFormedString {
  isWellFormed(): boolean;
}

/** True when the string has no lone surrogate. */
export function isWellFormed(s: string): boolean {
  return (s as unknown as WellFormedString).isWellFormed();
}

/** Index of the first unpaired surrogate in s[from, to), or -1. */
export function firstLoneSurrogate(s: string, from: number, to: number): number {
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff && i + 1 < to) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
        continue;
      }
    }
    return i;
  }
  return -1;
}

/** Byte length of the UTF-8 encoding of s[0, index) (a lone surrogate counts 3, as U+FFFD would). */
export function utf8Offset(s: string, index: number): number {
  let bytes = 0;
  for (let i = 0; i < index; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < index && isLowSurrogate(s.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/**
 * Offset of the first byte that starts an ill-formed UTF-8 sequence, or -1 when all is well-formed.
 * Follows the Unicode well-formed byte sequences table (Unicode 15, table 3-7): this rejects overlong
 * forms (C0, C1, E0 80..9F, F0 80..8F), encoded surrogates (ED A0..BF), code points above U+10FFFF
 * (F4 90.., F5..FF), stray continuation bytes and sequences cut short by the end of input.
 */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i] ?? 0;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need = 3; // continuation bytes after the lead byte
    let lo = 0x80; // allowed range of the second byte
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0; // overlong below U+0800
      if (b === 0xed) hi = 0x9f; // U+D800..DFFF are not scalar values
    } else if (b >= 0xf0 && b <= 0xf4) {
      if (b === 0xf0) lo = 0x90; // overlong below U+10000
      if (b === 0xf4) hi = 0x8f; // above U+10FFFF
    } else return i; // 80..C1 (stray continuation, overlong 2-byte), F5..FF
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined) return i;
      if (k === 1 ? c < lo || c > hi : c < 0x80 || c > 0xbf) return i;
    }
    i += need + 1;
  }
  return -1;
}
