/**
 * One tenant's idempotency keys in one process (memory-store.ts): at most `capacity` of them in
 * a ring (the oldest let go first), each for `ttlMs`, and of the answers they keep for replay at
 * most `maxBytes` — counted as the heap holds a text, two bytes a UTF-16 unit — the oldest
 * answers forgotten first, their keys free again. A tenant's own keys are all it can push out.
 */
import type { Ms } from '../../core/request/units.ts';
import { BoundedMap } from '../bounded-map.ts';
import type { StoredResponse } from './shared-store.ts';

/**
 * An idempotency key in flight (no response yet), done (its answer), or released (null). The
 * entry's identity names its holder; its fingerprint, the request it is bound to.
 */
export type KeyState = { readonly fingerprint: string; readonly response?: StoredResponse } | null;

/** What the answers of one tenant's keys may hold unless told otherwise: 64 MiB. */
export const REPLAY_BYTES = 64 * 1024 * 1024;

export class ReplayKeys {
  readonly #keys: BoundedMap<KeyState>;
  readonly #maxBytes: number;
  /** The answers kept, oldest first from `#head`, each with the entry it was kept as. */
  #answers: { readonly id: string; readonly state: KeyState; readonly bytes: number }[] = [];
  #head = 0;
  #bytes = 0;

  constructor(capacity: number, ttlMs: Ms, maxBytes: number) {
    this.#keys = new BoundedMap(capacity, ttlMs);
    this.#maxBytes = maxBytes;
  }

  get(id: string, nowMs: Ms): KeyState | undefined {
    return this.#keys.get(id, nowMs);
  }

  set(id: string, state: KeyState, nowMs: Ms): void {
    this.#keys.set(id, state, nowMs);
    const response = state?.response;
    if (response === undefined) return;
    const bytes = 2 * response.body.length;
    this.#answers.push({ id, state, bytes });
    this.#bytes += bytes;
    while (this.#bytes > this.#maxBytes && this.#head < this.#answers.length) {
      const oldest = this.#answers[this.#head++];
      this.#bytes -= oldest.bytes;
      if (this.#keys.get(oldest.id, nowMs) === oldest.state) this.#keys.delete(oldest.id);
    }
    // The forgotten head let go of now and then, so the list holds what it counts.
    if (this.#head > 1_024 && this.#head * 2 > this.#answers.length) {
      this.#answers = this.#answers.slice(this.#head);
      this.#head = 0;
    }
  }

  /** The keys held at `nowMs`, in flight or answered, oldest first. */
  *held(nowMs: Ms): IterableIterator<[string, NonNullable<KeyState>]> {
    for (const [id, state] of this.#keys.live(nowMs)) if (state !== null) yield [id, state];
  }
}
