/**
 * vLLM's `stop` strings on the simulated model's filler text. The text is a pure function of
 * each token's index (filler-text.ts), so where a reply meets a stop string is known when the
 * request is planned: the token that completes the string's first occurrence is its last, its
 * finish `stop`, and its text ends where the string begins — or, with
 * `include_stop_str_in_output`, where it ends. As in vLLM, no stop string is looked for before
 * `min_tokens` tokens are out.
 */
import { fillerPiece } from './filler-text.ts';

/** Where a reply meets its first stop string: its last token, and the characters its text keeps. */
export interface StopCut {
  /** Tokens generated, the one that completed the string included. */
  readonly tokens: number;
  /** Characters of the filler text (pieces joined) the reply keeps. */
  readonly chars: number;
}

/** The form of `stop` a request may carry. */
export type StopField = string | readonly string[] | null | undefined;

/** `stop` as a list of the strings that can match (an empty string never does). */
export function stopStrings(stop: StopField): readonly string[] {
  const list = stop === null || stop === undefined ? [] : typeof stop === 'string' ? [stop] : stop;
  return list.filter((s) => s !== '');
}

/**
 * The cut of a reply of at most `limit` tokens, or undefined when it meets none. Filler repeats
 * its words, so a string not met within one round of them and its own length is never met.
 */
export function stopCut(
  stops: readonly string[],
  limit: number,
  opts: { readonly minTokens?: number; readonly keep?: boolean } = {},
): StopCut | undefined {
  if (stops.length === 0) return undefined;
  const longest = Math.max(...stops.map((s) => s.length));
  const last = Math.min(limit, (opts.minTokens ?? 0) + 32 + longest);
  let text = '';
  for (let k = 0; k < last; k++) {
    const before = text.length;
    text += fillerPiece(k);
    if (k + 1 < (opts.minTokens ?? 0)) continue;
    let at = -1;
    let end = -1;
    for (const s of stops) {
      // Only an occurrence this token completes: those before were looked for already.
      const i = text.indexOf(s, Math.max(0, before - s.length + 1));
      if (i >= 0 && i + s.length > before && (at < 0 || i < at)) {
        at = i;
        end = i + s.length;
      }
    }
    if (at >= 0) return { tokens: k + 1, chars: opts.keep === true ? end : at };
  }
  return undefined;
}

/** A token's filler `piece` as the reply keeps it: `charsBefore` is where the piece starts. */
export function keptPiece(piece: string, charsBefore: number, cut: StopCut | undefined): string {
  if (cut === undefined) return piece;
  return piece.slice(0, Math.max(0, cut.chars - charsBefore));
}
