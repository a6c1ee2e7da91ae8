/**
 * A linear scan of a request body's JSON text, before `JSON.parse`, for three shapes JSON.parse
 * accepts but a request must not have:
 *
 * - nesting deeper than `MAX_JSON_DEPTH`: a 10 KB body of 5,000 nested arrays parses, then
 *   overflows the stack of whatever walks it recursively (JSON.stringify, an error message);
 * - a duplicate key: JSON.parse keeps the last one silently, another parser upstream may keep
 *   the first, and the two would then serve different requests. Keys compare by their decoded
 *   value, so `"a"` and `"\u0061"` are the same key;
 * - a lone surrogate (`"\ud800"`), in any key or string however deep — free-form objects such
 *   as a tool's JSON schema or `chat_template_kwargs` too: it has no UTF-8 form, so an upstream
 *   would read another string, or fail on it after the gateway admitted the request. Only a
 *   body with an escape in the surrogate range (one regex test) has its strings looked at.
 *
 * Main rule: the scan refuses only those three. Text that is not JSON is left to JSON.parse to
 * name, so where the text stops making sense (an unterminated string, a stray closer) the scan
 * just stops. It reads characters with `charCodeAt`, jumps over string contents with `indexOf`
 * and allocates only per key, so a 4 MB body scans in milliseconds.
 */
import { invalidRequest } from './errors.ts';
import { fieldPath } from './field-path.ts';

/**
 * The deepest nesting (objects and arrays together) a request body may have. OpenAI bodies need
 * about 5 (`messages[0].content[0].text` sits at depth 4); 32 leaves room for any extension
 * while keeping every recursive walk of a parsed body far from the stack's limit.
 */
export const MAX_JSON_DEPTH = 32;

/** Longest path an error shows; past it the path is cut with `…`. */
const PATH_CHARS = 100;

/** An escape in the surrogate range, U+D800–U+DFFF: paired or not, the string is decoded. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/** Marks the characters the scan acts on outside strings; everything else is skipped. */
const STRUCTURAL = new Uint8Array(128);
for (const c of [QUOTE, COMMA, OPEN_ARRAY, CLOSE_ARRAY, OPEN_OBJECT, CLOSE_OBJECT]) {
  STRUCTURAL[c] = 1;
}

/** Per open container, index = depth (1 is the outermost; 0 is unused). */
interface Frames {
  readonly isObject: Uint8Array;
  /** An object's next string is a key: set by `{` and `,`, cleared by the key itself. */
  readonly awaitingKey: Uint8Array;
  /** An array's current element. */
  readonly index: Int32Array;
  /** An object's current key, as the offsets of its quotes; -1: none yet. */
  readonly keyOpen: Int32Array;
  readonly keyClose: Int32Array;
  /** Keys seen, one set per depth, reused by every object opened there. */
  readonly keys: (Set<string> | undefined)[];
}

/**
 * The scan's frames, one set for every call: a scan runs to its end (or throws) without
 * yielding, so no two scans share them at once, and a request's scan allocates nothing up front.
 * Each frame is reset when its container opens; a key set is cleared then too.
 */
const FRAMES: Frames = {
  isObject: new Uint8Array(MAX_JSON_DEPTH + 1),
  awaitingKey: new Uint8Array(MAX_JSON_DEPTH + 1),
  index: new Int32Array(MAX_JSON_DEPTH + 1),
  keyOpen: new Int32Array(MAX_JSON_DEPTH + 1),
  keyClose: new Int32Array(MAX_JSON_DEPTH + 1),
  keys: [],
};

/** Throws a 400 naming the path if `text` nests too deep or repeats a key in an object. */
export function checkJsonShape(text: string): void {
  try {
    scan(text, FRAMES);
  } finally {
    // The key sets keep no request's keys past its scan.
    for (const seen of FRAMES.keys) if (seen !== undefined && seen.size > 0) seen.clear();
  }
}

function scan(text: string, f: Frames): void {
  const { isObject, awaitingKey, index } = f;
  const surrogates = SURROGATE_ESCAPE.test(text);
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128 || STRUCTURAL[c] === 0) continue;
    if (c === QUOTE) {
      const close = closingQuote(text, i);
      if (close < 0) return;
      if (depth > 0 && awaitingKey[depth] === 1 && !addKey(text, f, depth, i, close)) return;
      if (surrogates && holdsLoneSurrogate(text, i, close)) {
        const at = pathTo(text, f, depth);
        throw invalidRequest(
          `${at === '' ? 'body' : at}: expected well-formed Unicode text, got a lone surrogate`,
          at,
          'invalid_value',
        );
      }
      i = close;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (depth === MAX_JSON_DEPTH) {
        const at = pathTo(text, f, depth);
        throw invalidRequest(
          `request body: nesting deeper than ${MAX_JSON_DEPTH} levels at ${at}`,
          at,
          'invalid_value',
        );
      }
      depth++;
      isObject[depth] = awaitingKey[depth] = c === OPEN_OBJECT ? 1 : 0;
      index[depth] = 0;
      f.keyOpen[depth] = -1;
      const seen = f.keys[depth];
      if (seen !== undefined && seen.size > 0) seen.clear();
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === 0) return;
      depth--;
    } else if (depth > 0) {
      // A comma: the next element, or the next key.
      if (isObject[depth] === 1) awaitingKey[depth] = 1;
      else index[depth]++;
    }
  }
}

/**
 * Records the key between the quotes at `open` and `close` in the object at `depth`; throws if
 * the object already has it. False: the key is not valid JSON, so the scan stops.
 */
function addKey(text: string, f: Frames, depth: number, open: number, close: number): boolean {
  const key = decodeKey(text, open, close);
  if (key === undefined) return false;
  const seen = (f.keys[depth] ??= new Set());
  f.keyOpen[depth] = open;
  f.keyClose[depth] = close;
  f.awaitingKey[depth] = 0;
  if (!seen.has(key)) {
    seen.add(key);
    return true;
  }
  const object = pathTo(text, f, depth - 1);
  const shown = JSON.stringify(key.length > PATH_CHARS ? `${key.slice(0, PATH_CHARS)}…` : key);
  throw invalidRequest(
    `${object === '' ? 'body' : object}: duplicate key ${shown}`,
    pathTo(text, f, depth),
    'invalid_value',
  );
}

/**
 * The offset of the quote that closes the string opening at `open`, or -1. A quote is escaped
 * when an odd number of backslashes precede it; counting them back stops at the previous quote
 * at the latest, so the whole scan stays linear.
 */
function closingQuote(text: string, open: number): number {
  let q = text.indexOf('"', open + 1);
  while (q !== -1) {
    let slashes = 0;
    for (let k = q - 1; text.charCodeAt(k) === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return q;
    q = text.indexOf('"', q + 1);
  }
  return -1;
}

/** Whether the string between the quotes at `open` and `close` decodes to a lone surrogate. */
function holdsLoneSurrogate(text: string, open: number, close: number): boolean {
  if (!SURROGATE_ESCAPE.test(text.slice(open + 1, close))) return false;
  try {
    return !(JSON.parse(text.slice(open, close + 1)) as string).isWellFormed();
  } catch {
    return false;
  }
}

/** A key's decoded value; JSON.parse only when it holds an escape. Undefined: not valid JSON. */
function decodeKey(text: string, open: number, close: number): string | undefined {
  const raw = text.slice(open + 1, close);
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(text.slice(open, close + 1)) as string;
  } catch {
    return undefined;
  }
}

/** The path (as `fieldPath` prints it) through the containers open at depths 1…depth, cut at PATH_CHARS; '' for none. */
function pathTo(text: string, f: Frames, depth: number): string {
  const path: (string | number)[] = [];
  let chars = 0;
  for (let d = 1; d <= depth && chars <= PATH_CHARS; d++) {
    if (f.isObject[d] === 0) {
      path.push(f.index[d]);
      chars += String(f.index[d]).length + 2;
    } else {
      const open = f.keyOpen[d];
      const key = open < 0 ? '' : (decodeKey(text, open, f.keyClose[d]) ?? '');
      path.push(key.slice(0, PATH_CHARS + 1));
      chars += key.length + 1;
    }
  }
  if (path.length === 0) return '';
  const full = fieldPath(path);
  return full.length > PATH_CHARS || path.length < depth ? `${full.slice(0, PATH_CHARS)}…` : full;
}
