/**
 * Dispatch under flow control: may this replica take this request now, and at what cost to the
 * streams already running there? A replica takes a request when its reserved KV (prompt +
 * predicted p90 output of everything in flight) leaves room, its sequence limit allows (less the
 * seats others' requests hold there: another gateway's, by its last report), and the
 * next step — its decodes plus all pending prefill plus this prompt — is predicted to finish
 * within the tightest ITL objective of its streams (less a margin). A prompt too long for that
 * ("slow") may still go, alone (or with long prompts placed at the same instant, sharing its
 * step), where the expected number of streams it would push past their p99 gap is small: a
 * stream is at risk only if it ends before it has the ~100 gaps per slow gap that its p99 can
 * hide, which its class's observed output lengths make more or less likely. Otherwise the
 * request waits at the control plane, where order and deadlines are ours to keep, instead of
 * in the engine's FIFO. Every step predicted on a replica is the profile's times the replica's
 * observed pace (`step-pace.ts`; 1 while it keeps its profile), and every budget is the share of
 * the objective left after the gaps clients got late have cut it (`gap-feedback.ts`).
 */
import type { Ms, Tokens } from '../request/units.ts';
import type { StepShape } from '../ports/step-time.ts';
import type { FleetSpec } from '../fleet/fleet-spec.ts';
import { kvCapacityOf, kvUsedOf, type ReplicaKv } from '../fleet/replica-snapshot.ts';
import { PrefillTimes } from './prefill-times.ts';
import { StallVerdicts } from './stall-verdicts.ts';
import { LONG_PROMPT_SHARE, StagedPieces } from './staged-prefill.ts';
import { hasAdapterSlot, tightestItl } from '../fleet/replica-ledger.ts';
import type { LedgerEntry, ReplicaAccount } from '../fleet/replica-ledger.ts';
import type { RouteRequest } from './route.ts';
import { GapFeedback, type GapFeedbackParams } from './gap-feedback.ts';
import type { StepPaceParams } from './step-pace.ts';
import { choicesOf } from '../request/demand.ts';

export interface Candidate {
  readonly promptTokens: Tokens;
  readonly kvTokens: Tokens;
  /** The sequences it adds to the batch: its choices (`n`); absent: 1. */
  readonly seqs?: number;
  /** Infinity when the request's class sets no gap objective. */
  readonly itlSloMs: Ms;
  /** The LoRA adapter it runs with, if any. */
  readonly adapter?: string;
  /** The step share it was admitted under, which a cut since does not take from it; 0: none. */
  readonly gapShare?: number;
}

/**
 * What flow control weighs of a request: the prompt it must compute (less `hitTokens` its cache
 * there is expected to hold), its KV, its gap objective.
 */
export function candidateOf(r: RouteRequest, hitTokens: number): Candidate {
  return {
    promptTokens: r.req.inputTokens - hitTokens,
    kvTokens: r.demand.kvTokens,
    seqs: choicesOf(r.req),
    itlSloMs: r.cls.objectives.itlP99Ms ?? Infinity,
    adapter: r.req.adapter,
    gapShare: r.gapShare,
  };
}

export type Fit =
  | { readonly kind: 'fast'; readonly stepMs: Ms }
  | { readonly kind: 'slow'; readonly stepMs: Ms; readonly steps: number }
  | { readonly kind: 'no' };

export interface FlowControlParams {
  /** The step time's own variance: its share of every gap objective kept free. */
  readonly itlMarginRatio: number;
  /** What the host's relay may add to every gap before its client sees it: kept free too. */
  readonly relayGapRatio: number;
  readonly kvReserveRatio: number;
  /** Expected number of streams a stall may push past their p99 gap objective. */
  readonly stallRisk: number;
  /** How the gaps clients got cut the step share (`gap-feedback.ts`); null or absent: never. */
  readonly gapFeedback?: GapFeedbackParams | null;
  /**
   * Whether a long prompt goes to its replica in pieces that each fit a step beside the streams
   * (`stagedPieceTokens`), where the host can stage one (`FleetSpec.stagesPrefill`).
   */
  readonly stagedPrefill?: boolean;
  /** How each replica's pace is measured; null or absent: the profile is trusted. */
  readonly pace?: StepPaceParams | null;
}

const NO: Fit = { kind: 'no' };
/** Steps of prompt an engine may hold queued before another joins (../dispatch/README.md). */
const PREFILL_BACKLOG_STEPS = 8;

export class FlowControl {
  private readonly spec: FleetSpec;
  private readonly params: FlowControlParams;
  private readonly prefill: PrefillTimes;
  private readonly verdicts: StallVerdicts;
  /** Null unless long prompts are staged: the policy asks and the host can. */
  private readonly staged: StagedPieces | null;
  /** The most prompt tokens one sequence prefills in a step (`seqChunkTokens`). */
  private readonly seqChunk: Tokens;
  private readonly shape: StepShape = {
    prefillTokens: 0,
    prefillSeqs: 0,
    prefillAttnWork: 0,
    decodeSeqs: 0,
    decodeContextTokens: 0,
  };

  /**
   * The share of a gap objective a step may take: what neither the step time's variance nor the
   * host's relay is owed, less what the gaps clients got have cut (`gap-feedback.ts`), as of
   * the last `at`.
   */
  gapShare: number;
  /** Null when the policy trusts the host to deliver within the relay's share. */
  readonly feedback: GapFeedback | null;

  constructor(spec: FleetSpec, params: FlowControlParams) {
    this.spec = spec;
    this.params = params;
    this.prefill = new PrefillTimes(spec);
    this.verdicts = new StallVerdicts(params.stallRisk);
    const stages = params.stagedPrefill === true && spec.stagesPrefill === true;
    this.staged = stages ? new StagedPieces(this.prefill, params.pace != null) : null;
    this.seqChunk = this.prefill.seqChunk;
    this.gapShare = 1 - params.itlMarginRatio - params.relayGapRatio;
    const f = params.gapFeedback;
    this.feedback = f === undefined || f === null ? null : new GapFeedback(this.gapShare, f);
  }

  /** The share as it stands at `nowMs` (regained since the last cut). */
  at(nowMs: Ms): void {
    if (this.feedback !== null) this.gapShare = this.feedback.share(nowMs);
  }

  /** For a host's metrics: the share at `nowMs`, and the late gaps counted so far. */
  delivery(nowMs: Ms): { readonly share: number; readonly lateGaps: number } {
    const f = this.feedback;
    return { share: f?.share(nowMs) ?? this.gapShare, lateGaps: f?.lateGaps ?? 0 };
  }

  /**
   * `e`'s client got a gap of `gapMs` at `nowMs`. A late one beyond the stalls charged to the
   * stream cuts the share at once.
   */
  delivered(e: LedgerEntry, gapMs: Ms, nowMs: Ms): void {
    const f = this.feedback;
    if (f === null || !f.isLate(gapMs, e.itlSloMs)) return;
    if (++e.lateGaps <= e.slowGaps) return;
    f.late(nowMs);
    this.gapShare = f.share(nowMs);
  }

  /** Opens a placement pass: until `endPass`, no account changes (`stall-verdicts.ts`). */
  beginPass(): void {
    this.verdicts.beginPass();
  }

  /** Closes the pass, before anything is placed; what it remembered is dropped. */
  endPass(): void {
    this.verdicts.endPass();
  }

  /**
   * Whether the replica has room to hold `c` once what it is prefilling now has joined the
   * decodes: a sequence slot, KV, and a steady decode step within every objective. Without it
   * the request waits for running ones to end, not just for a step to pass.
   */
  holds(a: ReplicaAccount, c: Candidate, kv: ReplicaKv): boolean {
    const spec = this.spec;
    // Seats for each of its choices; an empty replica seats one request however many it asks
    // for (vLLM queues the choices past its max_num_seqs).
    const seqs = c.seqs ?? 1;
    // The seats others' requests hold there (another gateway's) are not this plan's to give.
    const seated = a.seqs + (kv.others ?? 0);
    if (seated > 0 && seated + seqs > spec.maxNumSeqs) return false;
    // A batch runs at most max_loras distinct adapters (vLLM's rule): with every slot held by
    // another adapter's requests, this one would wait in the engine until one of them ends.
    if (c.adapter !== undefined && !hasAdapterSlot(a, c.adapter, spec.maxLoras ?? 1)) return false;
    if (kvUsedOf(kv, a.reservedKvTokens, spec) + c.kvTokens > this.kvLimitOf(kv)) return false;
    // Once this request decodes, every step must still suit its own objective. An idle replica
    // takes one request whatever its pace: it would otherwise never be timed again.
    const pace = a.entries.length === 0 ? 1 : a.pace;
    // While staged prompts prefill there, a piece shares every other step with the decodes.
    const piece = a.pendingStagedTokens > 0 ? Math.min(this.pendingChunk(a), this.seqChunk) : 0;
    const steady =
      pace *
      this.mixedStepMs(
        a.seqs + seqs,
        a.decodeContextTokens + a.pendingPrefillTokens + seqs * c.promptTokens,
        piece,
      );
    return (
      steady <= Math.min(c.itlSloMs, tightestItl(a)) * Math.max(this.gapShare, c.gapShare ?? 0)
    );
  }

  /** `kv` is what the replica reports of its KV cache; the ledger's reservations are the floor. */
  fit(a: ReplicaAccount, c: Candidate, kv: ReplicaKv, nowMs: Ms): Fit {
    const spec = this.spec;
    if (!this.holds(a, c, kv)) return NO;
    // Its first token would wait for the engine's queue of prompts, which no prediction counts.
    if (a.pendingPrefillTokens >= PREFILL_BACKLOG_STEPS * spec.maxBatchedTokens) return NO;
    const own = Math.min(
      c.promptTokens,
      this.pieceOn(a, c.promptTokens, c.itlSloMs, c.seqs) || this.seqChunk,
    );
    const chunk = Math.min(this.pendingChunk(a) + own, spec.maxBatchedTokens);
    const s = this.shape;
    s.prefillTokens = chunk;
    s.prefillSeqs = a.prefilling + 1;
    s.prefillAttnWork = Math.min(a.pendingAttnWork + own * own, chunk * chunk);
    s.decodeSeqs = a.decoding;
    s.decodeContextTokens = a.decodeContextTokens;
    const stepMs = a.pace * spec.stepTime.stepMs(s);
    if (stepMs <= this.gapBudgetMs(a, c.gapShare)) return { kind: 'fast', stepMs };
    if (a.prefilling > 0) {
      // Long prompts placed at the same instant share one step, and so one stall, while they
      // fit its token budget: batching them is how a replica absorbs several for one stall.
      const joins = a.slowBatchMs === nowMs && this.pendingChunk(a) + own <= spec.maxBatchedTokens;
      return joins ? { kind: 'slow', stepMs, steps: 0 } : NO;
    }
    const steps = Math.ceil(c.promptTokens / own);
    return this.verdicts.tooRisky(a, steps) ? NO : { kind: 'slow', stepMs, steps };
  }

  /** Marks the slow steps a dispatched long prompt puts next to the replica's streams. */
  chargeSlow(a: ReplicaAccount, fit: Extract<Fit, { kind: 'slow' }>, nowMs: Ms): void {
    // Joining a batch already placed this instant (steps 0) adds no stall: it only opens one.
    a.slowBatchMs = nowMs;
    for (const e of a.entries) {
      if (e.itlSloMs === Infinity || e.streamed === 0) continue;
      e.slowGaps += fit.steps;
    }
  }

  /** The expected streams a stall may push past their p99 gap: more, and a slow prompt waits. */
  get stallRiskLimit(): number {
    return this.params.stallRisk;
  }

  /** KV tokens replica `kv` may reserve: its capacity (`kvCapacityOf`) less the reserve kept free. */
  kvLimitOf(kv: Pick<ReplicaKv, 'kvCapacityTokens'> = {}): Tokens {
    return kvCapacityOf(kv, this.spec) * (1 - this.params.kvReserveRatio);
  }

  /**
   * The most requests alike a replica holds at once under flow control: within its sequence
   * slots, its KV (each `kvTokens`), and a steady decode step (each stream at
   * `contextTokens`) within the ITL objective's budget — a step that also carries the first
   * chunk of a `promptTokens` prompt, when one is given, since new prompts keep arriving beside
   * the streams. At least 1. Every step at `pace` times the profile's (`step-pace.ts`), on a
   * replica whose KV cache is `kv`'s (by default the fleet's).
   */
  steadyBatch(
    itlSloMs: Ms,
    contextTokens: Tokens,
    kvTokens: Tokens,
    promptTokens = 0,
    pace = 1,
    kv: Pick<ReplicaKv, 'kvCapacityTokens'> = {},
  ): number {
    const byKv = Math.floor(this.kvLimitOf(kv) / Math.max(1, kvTokens));
    let hi = Math.max(1, Math.min(this.spec.maxNumSeqs, byKv));
    const budget = itlSloMs * this.gapShare;
    const chunk = Math.min(promptTokens, this.seqChunk);
    const step = (seqs: number) => pace * this.mixedStepMs(seqs, seqs * contextTokens, chunk);
    if (budget === Infinity || step(hi) <= budget) return hi;
    let lo = 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (step(mid) <= budget) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  decodeStepMs(seqs: number, contextTokens: Tokens): Ms {
    return seqs <= 0 ? 0 : this.mixedStepMs(seqs, contextTokens, 0);
  }

  /** A step of `seqs` decodes over `contextTokens` and a first prefill chunk of `chunk` tokens. */
  private mixedStepMs(seqs: number, contextTokens: Tokens, chunk: Tokens): Ms {
    const s = this.shape;
    s.prefillTokens = chunk;
    s.prefillSeqs = chunk > 0 ? 1 : 0;
    s.prefillAttnWork = chunk * chunk;
    s.decodeSeqs = seqs;
    s.decodeContextTokens = contextTokens;
    return this.spec.stepTime.stepMs(s);
  }

  /**
   * The gap budget of a replica's streams: the share of its tightest ITL objective a step may
   * take (`gapShare`, or `atLeast` for a request admitted before a cut; Infinity with none).
   */
  gapBudgetMs(a: ReplicaAccount, atLeast = 0): Ms {
    return tightestItl(a) * Math.max(this.gapShare, atLeast);
  }

  /**
   * How many of the steps that prefill `promptTokens` more on this replica run past `budgetMs`,
   * each chunk sharing a step with the replica's decodes: the slow gaps the prefill deals every
   * stream decoding there. 0 when every step keeps it.
   */
  slowPrefillSteps(a: ReplicaAccount, promptTokens: Tokens, budgetMs: Ms): number {
    if (budgetMs === Infinity || promptTokens <= 0) return 0;
    let slow = 0;
    for (let done = 0; done < promptTokens; done += this.seqChunk) {
      if (this.chunkStepMs(a, promptTokens, done) > budgetMs) slow++;
    }
    return slow;
  }

  /** The step that prefills a prompt's chunk from token `done` beside the replica's decodes, at its pace. */
  private chunkStepMs(a: ReplicaAccount, promptTokens: Tokens, done: Tokens): Ms {
    const chunk = Math.min(promptTokens - done, this.seqChunk);
    const s = this.shape;
    s.prefillTokens = chunk;
    s.prefillSeqs = 1;
    s.prefillAttnWork = chunk * (done + chunk);
    s.decodeSeqs = a.decoding;
    s.decodeContextTokens = a.decodeContextTokens;
    return a.pace * this.spec.stepTime.stepMs(s);
  }

  /**
   * Whether a prompt's prefill stalls streams of `itlSloMs` beside it, sent as it is sent: whole,
   * or staged where `stageable` (some replica takes pieces now); a request of `seqs` choices.
   */
  isLongPrompt(promptTokens: Tokens, itlSloMs: Ms, seqs = 1, stageable = true): boolean {
    if (this.prefill.stallMs(promptTokens) <= LONG_PROMPT_SHARE * itlSloMs * this.gapShare) {
      return false;
    }
    return !stageable || this.stagedPieceTokens(promptTokens, itlSloMs, seqs) === 0;
  }

  /** Whether any of `accounts` takes staged pieces now (`StagedPieces.takes`). */
  stagesAnywhere(accounts: readonly ReplicaAccount[]): boolean {
    const staged = this.staged;
    return staged !== null && accounts.some((a) => staged.takes(a));
  }

  /**
   * The piece a prompt with a gap objective of `itlSloMs` is staged in on replica `a`: staged
   * for the tightest objective it joins, its own or a stream's already there. 0: whole.
   */
  pieceOn(a: ReplicaAccount, promptTokens: Tokens, itlSloMs: Ms, seqs = 1): Tokens {
    if (this.staged?.takes(a) !== true) return 0;
    return this.stagedPieceTokens(promptTokens, Math.min(itlSloMs, tightestItl(a)), seqs);
  }

  /**
   * The piece a long prompt is staged in beside streams of `itlSloMs` (`staged-prefill.ts`); 0:
   * sent whole — staging is off, the host cannot stage, the prompt is short as it is, or the
   * request asks for several choices (each would compute the pieces).
   */
  stagedPieceTokens(promptTokens: Tokens, itlSloMs: Ms, seqs = 1): Tokens {
    return this.staged === null || seqs > 1
      ? 0
      : this.staged.pieceTokens(promptTokens, itlSloMs * this.gapShare);
  }

  /**
   * How long a prompt takes to prefill beside streams of `itlSloMs` as it is sent: whole, or in
   * staged pieces. Each piece shares a step of `stepMs` with the replica's other work, and a
   * step without it follows while its host sends the next.
   */
  servedPrefillMs(promptTokens: Tokens, itlSloMs: Ms, stepMs: Ms, seqs = 1, stages = true): Ms {
    const piece = stages ? this.stagedPieceTokens(promptTokens, itlSloMs, seqs) : 0;
    if (piece === 0) return this.prefill.prefillMs(promptTokens);
    const pieces = Math.ceil(promptTokens / piece);
    return this.prefill.prefillMs(promptTokens, piece) + (2 * pieces - 1) * stepMs;
  }

  /** The prompt pending on the replica that its next step may take: each prompt's chunk at most. */
  private pendingChunk(a: ReplicaAccount): Tokens {
    const pending = a.pendingPrefillTokens - a.pendingStagedTokens;
    if (this.seqChunk === this.spec.maxBatchedTokens) return pending;
    return Math.min(pending, Math.max(1, a.prefilling) * this.seqChunk);
  }

  /**
   * The step the replica runs now, by the profile alone (its pace not applied): its decodes
   * beside the first chunk of what it has pending to prefill, a staged prompt's piece in every
   * other step (half of it, on average). What its pace is measured against (`step-pace.ts`).
   */
  profileStepMs(a: ReplicaAccount): Ms {
    const pending = this.pendingChunk(a) - a.pendingStagedPieces / 2;
    const chunk = Math.min(pending, this.spec.maxBatchedTokens);
    const s = this.shape;
    s.prefillTokens = chunk;
    s.prefillSeqs = chunk > 0 ? a.prefilling : 0;
    s.prefillAttnWork = Math.min(a.pendingAttnWork, chunk * chunk);
    s.decodeSeqs = a.decoding;
    s.decodeContextTokens = a.decodeContextTokens;
    return this.spec.stepTime.stepMs(s);
  }

  /** A prompt alone on an otherwise idle replica: its prefill time, all chunks. */
  prefillMs(promptTokens: Tokens): Ms {
    return this.prefill.prefillMs(promptTokens);
  }
}
