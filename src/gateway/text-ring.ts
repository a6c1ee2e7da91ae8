/**
 * The decision lookup's store (`GET /admin/decisions/:id`): the newest texts by key — at most
 * `slots` of them, each for at most `ttlMs` — in one byte ring allocated once, outside the JS
 * heap. Under a flood of refusals each record kept as a string (or an object) outlived the young
 * generation: every scavenge copied ~0.6 KB per request into the old one, and full collections
 * swept it out again. Here a record costs the heap nothing: its key and text are written into
 * the ring's bytes, and read back only when looked up.
 *
 * Records are laid out in the order they were set, wrapping at the end of the bytes, so the ones
 * a new record overwrites are always the oldest: they are evicted first, as is the oldest when
 * every slot is in use. Keys are found through an open-addressed index of typed arrays, not a
 * `Map`: a `Map` of 20,000 string keys kept each request's id alive into the old generation, and
 * cost the flood's refusals more than the rest of their record (bench/RESULTS.md, "The decision
 * lookup without a Map"). An index entry names a slot and the set it was made for; it is dead
 * once that slot is evicted or holds a later record, so eviction touches no index. A key set
 * again reads its newest text. Time comes from the caller (`nowMs`), as in `BoundedMap`.
 */
import type { Ms } from '../core/request/units.ts';

/** UTF-8 takes at most 3 bytes per UTF-16 code unit. */
const MAX_BYTES_PER_UNIT = 3;
/** Index entries per slot: with 4, a quarter of the index is live at most. */
const INDEX_PER_SLOT = 4;
/**
 * How far past its hash a key's index entry may lie. A new entry takes the first dead one in
 * that window, else the oldest (whose key then cannot be found: with a quarter of the index
 * live, 16 live entries in a row has odds below 1 in 10⁹).
 */
const PROBES = 16;

/** FNV-1a over UTF-16 code units. */
function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class TextRing {
  readonly #bytes: Buffer;
  readonly #ttlMs: Ms;
  /** Per slot: where its record lies (key bytes, then text bytes), when, and which set made it. */
  readonly #start: Int32Array;
  readonly #keyLength: Int32Array;
  readonly #length: Int32Array;
  readonly #hash: Uint32Array;
  readonly #atMs: Float64Array;
  readonly #set: Float64Array;
  /** The index: per entry, a slot and the set that filled it (0: never used). */
  readonly #entrySlot: Int32Array;
  readonly #entrySet: Float64Array;
  readonly #mask: number;
  readonly #probes: number;
  /** The next slot to fill, and how many are in use (the oldest is `count` behind `head`). */
  #head = 0;
  #count = 0;
  /** Where the next record's bytes go. */
  #offset = 0;
  /** Sets so far: each record's number, from 1. */
  #sets = 0;

  constructor(slots: number, bytes: number, ttlMs: Ms = Infinity) {
    this.#bytes = Buffer.allocUnsafeSlow(bytes);
    this.#ttlMs = ttlMs;
    this.#start = new Int32Array(slots);
    this.#keyLength = new Int32Array(slots);
    this.#length = new Int32Array(slots);
    this.#hash = new Uint32Array(slots);
    this.#atMs = new Float64Array(slots);
    this.#set = new Float64Array(slots);
    const entries = 2 ** Math.ceil(Math.log2(Math.max(2, slots * INDEX_PER_SLOT)));
    this.#entrySlot = new Int32Array(entries);
    this.#entrySet = new Float64Array(entries);
    this.#mask = entries - 1;
    this.#probes = Math.min(PROBES, entries);
  }

  /** Keeps `text` under `key`; a record longer than the ring's bytes is not kept. */
  set(key: string, text: string, nowMs: Ms): void {
    const most = (key.length + text.length) * MAX_BYTES_PER_UNIT;
    if (most > this.#bytes.length) return;
    let at = this.#offset;
    if (at + most > this.#bytes.length) {
      // Not room to the end for the longest it could be: the tail is given up, and the records
      // lying there are the oldest.
      this.#evictOverlapping(at, this.#bytes.length);
      at = 0;
    }
    this.#evictOverlapping(at, at + most);
    if (this.#count === this.#set.length) this.#count--;
    const keyLength = this.#bytes.write(key, at, 'utf8');
    const length = keyLength + this.#bytes.write(text, at + keyLength, 'utf8');
    const slot = this.#head;
    const hash = hashOf(key);
    const set = ++this.#sets;
    this.#start[slot] = at;
    this.#keyLength[slot] = keyLength;
    this.#length[slot] = length;
    this.#hash[slot] = hash;
    this.#atMs[slot] = nowMs;
    this.#set[slot] = set;
    this.#head = (slot + 1) % this.#set.length;
    this.#count++;
    this.#offset = at + length;
    this.#index(hash, slot, set);
  }

  get(key: string, nowMs: Ms): string | undefined {
    const hash = hashOf(key);
    // The newest live record under `key` among the entries its hash may lie at.
    let found = -1;
    for (let i = 0; i < this.#probes; i++) {
      const e = (hash + i) & this.#mask;
      if (!this.#entryLive(e)) continue;
      const slot = this.#entrySlot[e];
      if (this.#hash[slot] !== hash || (found >= 0 && this.#set[slot] < this.#set[found])) continue;
      const start = this.#start[slot];
      if (this.#bytes.toString('utf8', start, start + this.#keyLength[slot]) === key) found = slot;
    }
    if (found < 0 || nowMs - this.#atMs[found] > this.#ttlMs) return undefined;
    const start = this.#start[found];
    return this.#bytes.toString(
      'utf8',
      start + this.#keyLength[found],
      start + this.#length[found],
    );
  }

  /** Points an index entry near `hash` at `slot`: the first dead one, else the oldest. */
  #index(hash: number, slot: number, set: number): void {
    let taken = hash & this.#mask;
    for (let i = 0, oldest = Infinity; i < this.#probes; i++) {
      const e = (hash + i) & this.#mask;
      if (!this.#entryLive(e)) {
        taken = e;
        break;
      }
      if (this.#entrySet[e] < oldest) {
        oldest = this.#entrySet[e];
        taken = e;
      }
    }
    this.#entrySlot[taken] = slot;
    this.#entrySet[taken] = set;
  }

  /** An entry is live while its slot is in use and still holds the record it was made for. */
  #entryLive(e: number): boolean {
    const slot = this.#entrySlot[e];
    const n = this.#set.length;
    return this.#set[slot] === this.#entrySet[e] && (slot - this.#oldest() + n) % n < this.#count;
  }

  /** Evicts the oldest records while the oldest lies in the bytes [from, to). */
  #evictOverlapping(from: number, to: number): void {
    while (this.#count > 0) {
      const slot = this.#oldest();
      const start = this.#start[slot];
      if (start >= to || (start < from && start + this.#length[slot] <= from)) return;
      this.#count--;
    }
  }

  #oldest(): number {
    const n = this.#set.length;
    return (this.#head - this.#count + n) % n;
  }
}
