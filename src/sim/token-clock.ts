/**
 * When each request's last token came, and the floor of its kept gaps, as columns indexed by
 * the request's slot. These two times are read and written on every simulated token; as fields
 * of the request's object each would be a boxed number (V8 stores a double field as a pointer
 * to a heap number), so a token would cost two more cache misses than the arithmetic needs. In
 * columns, the requests streaming at once sit side by side: slots are given in arrival order,
 * and those live at one time span a few thousand consecutive entries.
 *
 * A slot is never reused: a run of N requests holds 16·N bytes here.
 */
import type { Ms } from '../core/request/units.ts';

const INITIAL = 1024;

export class TokenClock {
  /** When the slot's last token came; NaN before its first. */
  lastMs = new Float64Array(INITIAL);
  /** Gaps at or below this cannot change the slot's kept tail (`TailSamples.floor`). */
  tailFloor = new Float64Array(INITIAL);
  private size = 0;

  /** A new slot: no token yet, every gap worth keeping. */
  slot(): number {
    if (this.size === this.lastMs.length) {
      this.lastMs = grown(this.lastMs);
      this.tailFloor = grown(this.tailFloor);
    }
    const k = this.size++;
    this.lastMs[k] = NaN;
    this.tailFloor[k] = -Infinity;
    return k;
  }

  /** The slot's last token time, or undefined before its first. */
  last(k: number): Ms | undefined {
    const v = this.lastMs[k];
    return Number.isNaN(v) ? undefined : v;
  }
}

function grown(a: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> {
  const b = new Float64Array(a.length * 2);
  b.set(a);
  return b;
}
