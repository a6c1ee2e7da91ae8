/**
 * The decision lookup's store (`GET /admin/decisions/:id`): the newest texts by key — at most
 * `slots` of them, each for at most `ttlMs` — in one byte ring allocated once, outside the JS
 * heap. Under a flood of refusals each record kept as a string (or an object) outlived the young
 * generation: every scavenge copied ~0.6 KB per request into the old one, and full collections
 * swept it out again. Here a record costs the heap only its key in the index; its text is
 * written into the ring's bytes, and read back only when looked up.
 *
 * Texts are laid out in the order they were set, wrapping at the end of the bytes, so the ones a
 * new text overwrites are always the oldest: they are evicted first, as is the oldest when every
 * slot is in use. A key set again points at its newest text; its older one is evicted silently.
 * Time comes from the caller (`nowMs`), as in `BoundedMap`.
 */
import type { Ms } from '../core/request/units.ts';

/** UTF-8 takes at most 3 bytes per UTF-16 code unit. */
const MAX_BYTES_PER_UNIT = 3;

export class TextRing {
  readonly #bytes: Buffer;
  readonly #ttlMs: Ms;
  readonly #index = new Map<string, number>();
  /** Per slot: its key (undefined when free), where its text lies, and when it was set. */
  readonly #keys: (string | undefined)[];
  readonly #start: Int32Array;
  readonly #length: Int32Array;
  readonly #atMs: Float64Array;
  /** The next slot to fill, and how many are in use (the oldest is `count` behind `head`). */
  #head = 0;
  #count = 0;
  /** Where the next text's bytes go. */
  #offset = 0;

  constructor(slots: number, bytes: number, ttlMs: Ms = Infinity) {
    this.#bytes = Buffer.allocUnsafeSlow(bytes);
    this.#ttlMs = ttlMs;
    this.#keys = new Array<string | undefined>(slots).fill(undefined);
    this.#start = new Int32Array(slots);
    this.#length = new Int32Array(slots);
    this.#atMs = new Float64Array(slots);
  }

  /** Keeps `text` under `key`; a text longer than the ring's bytes is not kept. */
  set(key: string, text: string, nowMs: Ms): void {
    const most = text.length * MAX_BYTES_PER_UNIT;
    if (most > this.#bytes.length) return;
    let at = this.#offset;
    if (at + most > this.#bytes.length) {
      // Not room to the end for the longest it could be: the tail is given up, and the texts
      // lying there are the oldest.
      this.#evictOverlapping(at, this.#bytes.length);
      at = 0;
    }
    this.#evictOverlapping(at, at + most);
    if (this.#count === this.#keys.length) this.#evictOldest();
    const written = this.#bytes.write(text, at, 'utf8');
    const slot = this.#head;
    const earlier = this.#index.get(key);
    if (earlier !== undefined) this.#keys[earlier] = undefined;
    this.#keys[slot] = key;
    this.#start[slot] = at;
    this.#length[slot] = written;
    this.#atMs[slot] = nowMs;
    this.#index.set(key, slot);
    this.#head = (slot + 1) % this.#keys.length;
    this.#count++;
    this.#offset = at + written;
  }

  get(key: string, nowMs: Ms): string | undefined {
    const slot = this.#index.get(key);
    if (slot === undefined) return undefined;
    if (nowMs - this.#atMs[slot] > this.#ttlMs) return undefined;
    const start = this.#start[slot];
    return this.#bytes.toString('utf8', start, start + this.#length[slot]);
  }

  /** Evicts the oldest texts while the oldest lies in the bytes [from, to). */
  #evictOverlapping(from: number, to: number): void {
    while (this.#count > 0) {
      const slot = this.#oldest();
      const start = this.#start[slot];
      if (start >= to || (start < from && start + this.#length[slot] <= from)) return;
      this.#evictOldest();
    }
  }

  #oldest(): number {
    const n = this.#keys.length;
    return (this.#head - this.#count + n) % n;
  }

  #evictOldest(): void {
    const slot = this.#oldest();
    const key = this.#keys[slot];
    // A key set again since lives in a newer slot: this one was already let go.
    if (key !== undefined) this.#index.delete(key);
    this.#keys[slot] = undefined;
    this.#count--;
  }
}
