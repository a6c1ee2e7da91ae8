/**
 * Staged prefill: a long prompt goes to its replica in pieces, each a prefix of it that the
 * replica's prefix cache keeps for the next, so no step of its prefill stalls the streams there.
 * Against vLLM a host sends piece k as a request for the prompt's first k pieces with one output
 * token, and the replica computes only the piece its cache does not hold; the last is the request
 * itself (`gateway/staged-pieces.ts`). The simulator's and the embedded fleet's engines model it
 * (`engine/pieces.ts`).
 * Each piece is the most tokens, in whole STAGED_PIECE_QUANTUM, whose heaviest step alone takes
 * at most STAGED_PIECE_SHARE of the step budget; the rest of the budget is the replica's decodes.
 */
import type { Ms, Tokens } from '../request/units.ts';
import type { ReplicaAccount } from '../fleet/replica-ledger.ts';
import type { PrefillTimes } from './prefill-times.ts';

/** Share of the step budget a prompt's heaviest step alone may take and the prompt be short. */
export const LONG_PROMPT_SHARE = 0.9;
/** Share of the step budget a staged piece may take alone, the decodes beside it the rest. */
const STAGED_PIECE_SHARE = 0.6;
/** Pieces are whole multiples of this many tokens (16 of vLLM's blocks): no smaller piece. */
const STAGED_PIECE_QUANTUM = 256;
/** Prompt sizes whose piece is remembered, for the budget they were sized under. */
const PIECE_MEMO = 4_096;

export class StagedPieces {
  private readonly prefill: PrefillTimes;
  /** Whether replicas' paces are measured (`step-pace.ts`); else the profile is trusted. */
  private readonly measuresPace: boolean;
  private readonly memo = new Map<Tokens, Tokens>();
  private memoBudgetMs = NaN;

  constructor(prefill: PrefillTimes, measuresPace: boolean) {
    this.prefill = prefill;
    this.measuresPace = measuresPace;
  }

  /**
   * Whether replica `a` takes staged pieces. They are sized by the profile: on a replica slower
   * than it, or not yet known to keep it, each could make a late gap of the step it takes. There
   * a long prompt goes whole, its one stall planned.
   */
  takes(a: ReplicaAccount): boolean {
    return a.pace <= 1 && (!this.measuresPace || a.paceTrack.measured);
  }

  /**
   * The piece a prompt is staged in under a step budget of `budgetMs`; 0: it is short as it is
   * (its heaviest step within LONG_PROMPT_SHARE of the budget), or not even one quantum fits.
   */
  pieceTokens(promptTokens: Tokens, budgetMs: Ms): Tokens {
    if (budgetMs === Infinity || promptTokens <= STAGED_PIECE_QUANTUM) return 0;
    if (budgetMs !== this.memoBudgetMs) {
      this.memo.clear();
      this.memoBudgetMs = budgetMs;
    }
    const known = this.memo.get(promptTokens);
    if (known !== undefined) return known;
    if (this.memo.size >= PIECE_MEMO) this.memo.clear();
    const piece = this.size(promptTokens, budgetMs);
    this.memo.set(promptTokens, piece);
    return piece;
  }

  private size(promptTokens: Tokens, budgetMs: Ms): Tokens {
    const prefill = this.prefill;
    if (prefill.stallMs(promptTokens) <= LONG_PROMPT_SHARE * budgetMs) return 0;
    const fits = (quanta: number) =>
      prefill.stallMs(promptTokens, quanta * STAGED_PIECE_QUANTUM) <= STAGED_PIECE_SHARE * budgetMs;
    // The most whole quanta that fit, of fewer than the prompt's own tokens.
    let lo = 0;
    let hi = Math.floor(Math.min(promptTokens - 1, prefill.seqChunk) / STAGED_PIECE_QUANTUM);
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (fits(mid)) lo = mid;
      else hi = mid - 1;
    }
    return lo * STAGED_PIECE_QUANTUM;
  }
}
