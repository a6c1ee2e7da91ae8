/**
 * Randomness, as policy code may draw it. Implementations are seeded and deterministic; the
 * seed is recorded in every report so a run can be repeated exactly.
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** An independent generator derived from this one's seed and `stream`; does not advance this one. */
  fork(stream: string): Rng;
}
