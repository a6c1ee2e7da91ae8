/**
 * A small, fast, seeded generator (sfc32, seeded through splitmix32). The same seed gives the
 * same sequence on every platform, which the simulator's byte-identical reports rely on.
 */
import type { Rng } from '../core/ports/rng.ts';

function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) | 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** FNV-1a over the UTF-16 code units of `text`, mixed into `seed`. */
function mix(seed: number, text: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

export class SeededRng implements Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  readonly seed: number;
  /** Path of stream names from the root, so `a.fork('x')` and `b.fork('x')` differ when a and b do. */
  readonly stream: string;

  constructor(seed: number, stream = '') {
    this.seed = seed;
    this.stream = stream;
    const init = splitmix32(mix(seed, stream));
    this.a = init();
    this.b = init();
    this.c = init();
    this.d = init();
    for (let i = 0; i < 12; i++) this.next();
  }

  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  fork(stream: string): Rng {
    return new SeededRng(this.seed, `${this.stream}/${stream}`);
  }
}
