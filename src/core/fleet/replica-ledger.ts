/**
 * The control plane's own account of each replica: what it dispatched there that has not ended,
 * which of those are still prefilling, how much prompt is pending, how many decode and with how
 * much context, the KV it reserved, and the ITL objectives of the streams running there. Built
 * only from what the control plane itself sees (dispatches, streamed tokens, ends), so it holds
 * for a real backend as well as a simulated one; it never mistakes a silent replica for idle.
 * From it, too, how long until the requests running now have ended (`stepsUntilEnded`).
 */
import type { Ms, Tokens } from '../request/units.ts';
import type { SortedWindow } from '../stats/sorted-window.ts';

/** The fraction of outputs of at most `tokens`. */
export interface LengthCdf {
  cdf(tokens: number): number;
}

export interface LedgerEntry {
  readonly replica: number;
  /** Prompt tokens the replica must compute (cache hits the router guarantees excluded). */
  readonly promptTokens: Tokens;
  readonly kvTokens: Tokens;
  /**
   * The sequences it runs in the batch: its choices (`n`), which decode side by side. Its
   * `streamed` counts the first choice's tokens: the steps it has run.
   */
  readonly seqs: number;
  /** The stream's p99 gap objective; Infinity when its class sets none. */
  readonly itlSloMs: Ms;
  /** What its class and tenant's outputs look like, when known: how likely it ends soon. */
  readonly lengths: LengthCdf | undefined;
  /** It cannot produce more tokens than this (its max_tokens or class budget). */
  readonly capTokens: number;
  /** The output it was predicted to reach (its p50, within its cap): how long it should run. */
  readonly expectTokens: number;
  /** The LoRA adapter it runs with, if any: it holds one of its replica's adapter slots. */
  readonly adapter?: string;
  /** Its prompt goes in staged pieces of this many tokens (`../routing/staged-prefill.ts`). */
  readonly pieceTokens?: Tokens;
  streamed: number;
  /** Slow steps (longer than its objective allows) the dispatcher has put next to it. */
  slowGaps: number;
  /** Gaps its client got late (`../routing/gap-feedback.ts`): past its slow gaps, unplanned. */
  lateGaps: number;
  /** Position in its replica's entry list. */
  slot: number;
  /**
   * Its current pace span (`../routing/step-pace.ts`): when it began and at which token, and
   * the profile's time for the steps since.
   */
  spanFromMs: Ms;
  spanFromToken: number;
  spanProfileMs: Ms;
}

export interface ReplicaAccount {
  readonly entries: LedgerEntry[];
  /** Σ seqs over its entries: the batch slots (vLLM's max_num_seqs) they hold. */
  seqs: number;
  prefilling: number;
  pendingPrefillTokens: Tokens;
  /** Of those, what a step cannot take yet: staged prompts' tokens past their next piece. */
  pendingStagedTokens: Tokens;
  /** Their pieces: what the steps that take a piece take of them (every other step, each). */
  pendingStagedPieces: Tokens;
  /** Σ first chunk² over prefilling entries (a prompt sent whole: prompt²): attention work. */
  pendingAttnWork: number;
  decoding: number;
  decodeContextTokens: Tokens;
  reservedKvTokens: Tokens;
  /** Gap-sensitive streams per objective value (a handful of classes, so a tiny map). */
  readonly itlSlos: Map<Ms, number>;
  /** Requests in flight per LoRA adapter: the distinct adapters its batch holds. */
  readonly adapters: Map<string, number>;
  /** When a slow prompt was last placed here: prompts placed at that same instant share its step. */
  slowBatchMs: Ms;
  /** Counts each change of its batch (a request placed, prefilled or ended). */
  batchVersion: number;
  /**
   * Its steps' observed time over the profile's (`../routing/step-pace.ts`): every step flow
   * control predicts here is multiplied by it. 1 until measured otherwise; never below.
   */
  pace: number;
  /** What measuring its pace keeps (`../routing/step-pace.ts`). */
  readonly paceTrack: PaceTrack;
}

/** A replica's steps as its streams' tokens show them, and its recent pace samples. */
export interface PaceTrack {
  /** Recent samples (null until the first), and when the last was taken. */
  samples: SortedWindow | null;
  /** Whether enough samples have come for `pace` to be read from them (`minSamples`). */
  measured: boolean;
  sampledMs: Ms;
  /** The latest instant tokens came from it: the end of a step, the start of the next. */
  boundaryMs: Ms;
  /** The profile's time for the step that ended then. */
  endedStepMs: Ms;
  /** The profile's time for the step that began then, kept once its batch changed since (else NaN). */
  runningStepMs: Ms;
  /** The profile's time for its batch as the ledger stands (NaN once the batch has changed). */
  batchStepMs: Ms;
}

export class ReplicaLedger {
  readonly replicas: ReplicaAccount[] = [];
  /** Fleet-wide sums, kept as they change so a summary costs O(1), not O(replicas). */
  inFlight = 0;
  decoding = 0;
  decodeContextTokens: Tokens = 0;

  constructor(n: number) {
    this.resize(n);
  }

  /** The tightest token-gap objective among every replica's streams; Infinity with none. */
  tightestItl(): Ms {
    let min = Infinity;
    for (const r of this.replicas) min = Math.min(min, tightestItl(r));
    return min;
  }

  resize(n: number): void {
    while (this.replicas.length < n) {
      this.replicas.push({
        entries: [],
        seqs: 0,
        prefilling: 0,
        pendingPrefillTokens: 0,
        pendingStagedTokens: 0,
        pendingStagedPieces: 0,
        pendingAttnWork: 0,
        decoding: 0,
        decodeContextTokens: 0,
        reservedKvTokens: 0,
        itlSlos: new Map(),
        adapters: new Map(),
        slowBatchMs: -Infinity,
        batchVersion: 0,
        pace: 1,
        paceTrack: {
          samples: null,
          measured: false,
          sampledMs: -Infinity,
          boundaryMs: -Infinity,
          endedStepMs: 0,
          runningStepMs: NaN,
          batchStepMs: NaN,
        },
      });
    }
  }

  add(e: LedgerEntry): void {
    const r = this.replicas[e.replica];
    e.slot = r.entries.length;
    r.entries.push(e);
    r.seqs += e.seqs;
    this.inFlight++;
    r.prefilling++;
    r.pendingPrefillTokens += e.promptTokens;
    r.pendingStagedTokens += stagedTokens(e);
    r.pendingStagedPieces += stagedPiece(e);
    r.pendingAttnWork += attnWork(e);
    r.reservedKvTokens += e.kvTokens;
    batchChanged(r);
    if (e.itlSloMs !== Infinity) r.itlSlos.set(e.itlSloMs, (r.itlSlos.get(e.itlSloMs) ?? 0) + 1);
    if (e.adapter !== undefined) r.adapters.set(e.adapter, (r.adapters.get(e.adapter) ?? 0) + 1);
  }

  /** `e`'s first token streamed at `nowMs`. */
  firstToken(e: LedgerEntry, nowMs: Ms): void {
    const r = this.replicas[e.replica];
    this.endPrefill(r, e);
    e.streamed = 1;
    e.spanFromMs = nowMs;
    e.spanFromToken = 1;
    e.spanProfileMs = 0;
    const context = e.seqs * (e.promptTokens + 1);
    r.decoding += e.seqs;
    r.decodeContextTokens += context;
    this.decoding += e.seqs;
    this.decodeContextTokens += context;
  }

  /** A step of `e`'s: a token of each of its choices. */
  token(e: LedgerEntry): void {
    e.streamed++;
    this.replicas[e.replica].decodeContextTokens += e.seqs;
    this.decodeContextTokens += e.seqs;
  }

  remove(e: LedgerEntry): void {
    const r = this.replicas[e.replica];
    if (r.entries[e.slot] !== e) return;
    if (e.streamed === 0) this.endPrefill(r, e);
    else {
      const context = e.seqs * (e.promptTokens + e.streamed);
      r.decoding -= e.seqs;
      r.decodeContextTokens -= context;
      this.decoding -= e.seqs;
      this.decodeContextTokens -= context;
    }
    r.seqs -= e.seqs;
    r.reservedKvTokens -= e.kvTokens;
    batchChanged(r);
    if (e.itlSloMs !== Infinity) {
      const left = (r.itlSlos.get(e.itlSloMs) ?? 1) - 1;
      if (left === 0) r.itlSlos.delete(e.itlSloMs);
      else r.itlSlos.set(e.itlSloMs, left);
    }
    if (e.adapter !== undefined) {
      const left = (r.adapters.get(e.adapter) ?? 1) - 1;
      if (left === 0) r.adapters.delete(e.adapter);
      else r.adapters.set(e.adapter, left);
    }
    this.inFlight--;
    const last = r.entries.pop() as LedgerEntry;
    if (last !== e) {
      r.entries[e.slot] = last;
      last.slot = e.slot;
    }
    e.slot = -1;
  }

  /**
   * The mean pace of the replicas measured so far (`../routing/step-pace.ts`): what a group of
   * them steps at against its profile. 1 before any is measured.
   */
  meanPace(): number {
    let sum = 0;
    let n = 0;
    for (const r of this.replicas) {
      if (r.paceTrack.samples === null) continue;
      sum += r.pace;
      n++;
    }
    return n === 0 ? 1 : sum / n;
  }

  /**
   * Decode steps until `k` of the requests running now have ended, each expected to run to its
   * predicted output (a stream already past it, halfway on to its cap): when nothing more fits, a
   * queued request dispatches no sooner than a running one ends, and after a burst the running
   * ones end together, not at the rate the queue drained before. Infinity with nothing running.
   * Recomputed when the ledger has changed, at most once per millisecond of `nowMs`.
   */
  stepsUntilEnded(k: number, nowMs: Ms): number {
    const n = this.inFlight;
    if (n === 0) return Infinity;
    if (this.drainAtMs !== nowMs || this.drainInFlight !== n) {
      if (this.drainSteps.length < n) this.drainSteps = new Float64Array(2 * n);
      let i = 0;
      for (const r of this.replicas) {
        for (const e of r.entries) {
          this.drainSteps[i++] = Math.max(1, expectedTogo(e));
        }
      }
      this.drainSorted = this.drainSteps.subarray(0, i).sort();
      this.drainAtMs = nowMs;
      this.drainInFlight = n;
    }
    const sorted = this.drainSorted;
    return sorted[Math.min(k, sorted.length) - 1];
  }

  /**
   * Decode steps until replica `index` frees an adapter slot: until the last request of its
   * soonest-ending adapter has ended, each expected to run to its predicted output (as in
   * `stepsUntilEnded`). Infinity when no adapter runs there.
   */
  stepsUntilAdapterSlot(index: number): number {
    let soonest = Infinity;
    const last = this.adapterLast;
    last.clear();
    for (const e of this.replicas[index].entries) {
      if (e.adapter === undefined) continue;
      const togo = Math.max(1, expectedTogo(e));
      if (togo > (last.get(e.adapter) ?? 0)) last.set(e.adapter, togo);
    }
    for (const togo of last.values()) if (togo < soonest) soonest = togo;
    return soonest;
  }

  /**
   * With every one of `replicas`' adapter slots held by other adapters, the steps until the first
   * frees one for `adapter` (`stepsUntilAdapterSlot`, at that replica's pace); 0 where one of them
   * has a slot for it now, or none will free one.
   */
  stepsUntilSlotFor(adapter: string, replicas: Iterable<{ index: number }>, maxLoras: number) {
    let steps = Infinity;
    for (const r of replicas) {
      const a = this.replicas[r.index];
      if (hasAdapterSlot(a, adapter, maxLoras)) return 0;
      steps = Math.min(steps, a.pace * this.stepsUntilAdapterSlot(r.index));
    }
    return steps === Infinity ? 0 : steps;
  }

  private readonly adapterLast = new Map<string, number>();
  private drainSteps = new Float64Array(256);
  private drainSorted = new Float64Array(0);
  private drainAtMs = NaN;
  private drainInFlight = -1;

  private endPrefill(r: ReplicaAccount, e: LedgerEntry): void {
    batchChanged(r);
    r.prefilling--;
    r.pendingPrefillTokens -= e.promptTokens;
    r.pendingStagedTokens -= stagedTokens(e);
    r.pendingStagedPieces -= stagedPiece(e);
    r.pendingAttnWork -= attnWork(e);
  }
}

/** A staged prompt's tokens past its first piece: no step takes them with the rest. */
const stagedPiece = (e: LedgerEntry): Tokens =>
  e.pieceTokens === undefined ? 0 : Math.min(e.promptTokens, e.pieceTokens);

const stagedTokens = (e: LedgerEntry): Tokens =>
  e.pieceTokens === undefined ? 0 : Math.max(0, e.promptTokens - e.pieceTokens);

/** The attention work of a prompt's first step: its first chunk (or staged piece) squared. */
const attnWork = (e: LedgerEntry): number => {
  const first = Math.min(e.promptTokens, e.pieceTokens ?? Infinity);
  return first * first;
};

/** Tokens `e` is expected to stream yet: to its predicted output, or past it, halfway on to its cap (as likely as not). */
function expectedTogo(e: LedgerEntry): number {
  return e.streamed < e.expectTokens ? e.expectTokens - e.streamed : (e.capTokens - e.streamed) / 2;
}

/**
 * Whether a request with `adapter` has an adapter slot on `r` now: its adapter is in flight
 * there, or fewer than `maxLoras` adapters are (vLLM runs at most that many in one batch).
 */
export function hasAdapterSlot(r: ReplicaAccount, adapter: string, maxLoras: number): boolean {
  return r.adapters.has(adapter) || r.adapters.size < maxLoras;
}

/** The tightest ITL objective among a replica's streams; Infinity when none has one. */
export function tightestItl(r: ReplicaAccount): Ms {
  let min = Infinity;
  for (const slo of r.itlSlos.keys()) if (slo < min) min = slo;
  return min;
}

/** `r`'s batch changed: its profile step time is stale, and what was remembered of it. */
function batchChanged(r: ReplicaAccount): void {
  r.paceTrack.batchStepMs = NaN;
  r.batchVersion++;
}
