/**
 * A request body's bytes as text. Main rule: bytes that are not UTF-8 are a 400 naming the
 * offset of the first bad sequence, never replacement characters — a body decoded with U+FFFD
 * in it would be a different request from the one the client sent, forwarded as if it were
 * the same. The offset is searched for only once decoding has failed, so valid bodies pay for
 * the native decoder alone.
 */
import { invalidRequest } from './errors.ts';

const strict = new TextDecoder('utf-8', { fatal: true });

export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return strict.decode(bytes);
  } catch {
    throw invalidRequest(
      `request body: expected UTF-8 text, got invalid bytes at offset ${firstInvalidByte(bytes)}`,
      null,
      'invalid_value',
    );
  }
}

/**
 * The offset where the first ill-formed sequence starts, by the Unicode standard's table of
 * well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF); the length if
 * there is none.
 */
export function firstInvalidByte(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i];
    if (lead < 0x80) {
      i++;
      continue;
    }
    let trail: number;
    // The second byte's range is narrower after some leads; later bytes are always 80..BF.
    let lo = 0x80;
    let hi = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) trail = 1;
    else if (lead >= 0xe0 && lead <= 0xef) trail = 2;
    else if (lead >= 0xf0 && lead <= 0xf4) trail = 3;
    else return i;
    if (lead === 0xe0) lo = 0xa0; // overlong
    if (lead === 0xed) hi = 0x9f; // surrogates
    if (lead === 0xf0) lo = 0x90; // overlong
    if (lead === 0xf4) hi = 0x8f; // past U+10FFFF
    for (let k = 1; k <= trail; k++) {
      const b = i + k < bytes.length ? bytes[i + k] : -1;
      if (b < (k === 1 ? lo : 0x80) || b > (k === 1 ? hi : 0xbf)) return i;
    }
    i += trail + 1;
  }
  return bytes.length;
}
