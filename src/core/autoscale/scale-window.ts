/**
 * What an autoscaler host counts between two ticks — requests offered and their prompt sizes,
 * requests refused, requests completed, the good among them (the rest missed), and their output sizes — turned into the rates and
 * the request mix a tick's signals carry. The simulator and the gateway count the same way.
 * The mix's output sizes are those completed (what a control plane sees), never a workload's
 * hidden lengths; it is smoothed over the last half minute or so, and kept through ticks with
 * nothing to show. Hosts that share one fleet (gateway replicas behind one load balancer) each
 * count their own part; a tick's `WindowShare`s add up to the fleet's (`windowRates`).
 */
import type { Ms } from '../request/units.ts';
import { CAPACITY_REASONS, type RejectReason } from '../request/decision.ts';
import type { SloClass, SloClassName } from '../request/slo-classes.ts';
import type { FlowControl } from '../routing/flow-control.ts';

export interface WindowRates {
  readonly arrivalRps: number;
  readonly goodRps: number;
  /** Requests that missed their SLO per second: refused, expired waiting, or completed late. */
  readonly missedRps: number;
  /** Mean prompt and output tokens of the recent requests; null before any has completed. */
  readonly mix: { readonly input: number; readonly output: number } | null;
}

/** One host's tick, in the terms that add up across the hosts of one fleet. */
export interface WindowShare {
  readonly arrivalRps: number;
  readonly goodRps: number;
  readonly missedRps: number;
  /** The mix's smoothed sums: requests sized and their prompt tokens… */
  readonly mixArrivals: number;
  readonly mixInput: number;
  /** …and requests completed and their output tokens. */
  readonly mixCompletions: number;
  readonly mixOutput: number;
}

/** The rates and the mix of the fleet whose hosts' ticks these are. */
export function windowRates(shares: readonly WindowShare[]): WindowRates {
  let arrivalRps = 0;
  let goodRps = 0;
  let missedRps = 0;
  let arrivals = 0;
  let input = 0;
  let completions = 0;
  let output = 0;
  for (const s of shares) {
    arrivalRps += s.arrivalRps;
    goodRps += s.goodRps;
    missedRps += s.missedRps;
    arrivals += s.mixArrivals;
    input += s.mixInput;
    completions += s.mixCompletions;
    output += s.mixOutput;
  }
  const mix =
    arrivals > 0 && completions > 0
      ? { input: input / arrivals, output: output / completions }
      : null;
  return { arrivalRps, goodRps, missedRps, mix };
}

/**
 * Whether a decision is a miss the fleet's size answers for: a refusal for capacity, or an
 * expiry in the queue. A tenant's own limits, or a request its contract refuses, are not.
 */
export function missedForCapacity(r: {
  readonly admission: { readonly result: string; readonly reason: RejectReason | null };
}): boolean {
  const a = r.admission;
  if (a.result === 'expire') return true;
  return a.result === 'reject' && a.reason !== null && CAPACITY_REASONS.has(a.reason);
}

/** How much of the mix each tick carries on to the next: about the last 30 s at 5 s ticks. */
const MIX_KEEP = 0.85;

export class ScaleWindow {
  private arrivals = 0;
  private completions = 0;
  private good = 0;
  private misses = 0;
  /** The mix's sums, decayed by MIX_KEEP a tick: a 5 s window holds too few requests to size. */
  private mixArrivals = 0;
  private mixInput = 0;
  private mixCompletions = 0;
  private mixOutput = 0;

  /**
   * A request was offered (its first attempt) with a prompt of this size; null when it was
   * refused before its prompt was read (shed, a deadline out of reach): demand all the same,
   * but nothing to size the mix by.
   */
  arrived(inputTokens: number | null): void {
    this.arrivals++;
    if (inputTokens === null) return;
    this.mixArrivals++;
    this.mixInput += inputTokens;
  }

  /** A request completed with this many output tokens, good or not. */
  completed(outputTokens: number, good: boolean): void {
    this.completions++;
    this.mixCompletions++;
    this.mixOutput += outputTokens;
    if (good) this.good++;
    else this.misses++;
  }

  /** A request was refused at the door, or expired waiting for a replica. */
  refused(): void {
    this.misses++;
  }

  /** The rates over the `spanMs` since the last take, and the mix; starts the next window. */
  take(spanMs: Ms): WindowRates {
    return windowRates([this.share(spanMs)]);
  }

  /** `take`, as a share of the fleet's tick. */
  share(spanMs: Ms): WindowShare {
    const seconds = spanMs / 1000;
    const share = {
      arrivalRps: this.arrivals / seconds,
      goodRps: this.good / seconds,
      missedRps: this.misses / seconds,
      mixArrivals: this.mixArrivals,
      mixInput: this.mixInput,
      mixCompletions: this.mixCompletions,
      mixOutput: this.mixOutput,
    };
    this.arrivals = 0;
    this.completions = 0;
    this.good = 0;
    this.misses = 0;
    this.mixArrivals *= MIX_KEEP;
    this.mixInput *= MIX_KEEP;
    this.mixCompletions *= MIX_KEEP;
    this.mixOutput *= MIX_KEEP;
    return share;
  }
}

/** The share of a group's time the model plans to keep busy: the rest absorbs arrival noise. */
const TARGET_BUSY = 0.8;

/** One replica group's capacity at SLO for a request mix. */
export interface GroupCapacity {
  /** Requests per second. */
  readonly rps: number;
  /** Streams it holds at once within the gap objective and KV. */
  readonly streams: number;
}

/**
 * One replica group's capacity at SLO for requests of these mean sizes, as the step-time model
 * predicts at the replicas' measured `pace` (every step that many times the profile's). A request costs the group its prefill — compute the streams wait through — and its
 * output's share of the decode steps, each shared by the batch; the batch is the most flow
 * control lets a replica hold within `itlSloMs` (the tightest gap objective served) with a new
 * prompt's chunk in the step, and within KV. The rate is the one that keeps the group busy
 * `TARGET_BUSY` of its time at that batch.
 */
export function groupCapacity(
  flow: FlowControl,
  itlSloMs: Ms,
  input: number,
  output: number,
  /** Prompt tokens it computes itself: disaggregated, only the last one (the rest arrive). */
  prefill: number = input,
  pace = 1,
): GroupCapacity {
  const context = input + output / 2;
  const streams = flow.steadyBatch(itlSloMs, context, input + output, prefill, pace);
  const costMs =
    pace *
    (flow.prefillMs(Math.max(1, prefill)) +
      (output * flow.decodeStepMs(streams, streams * context)) / streams);
  return { rps: costMs > 0 ? (TARGET_BUSY * 1000) / costMs : 0, streams };
}

/**
 * One prefill group's capacity (disaggregated serving) for prompts of this mean size: steps of
 * `stepTokens` prompt tokens one after another, kept busy `TARGET_BUSY` of the time; its
 * streams are the prompts of one step.
 */
export function prefillGroupCapacity(
  flow: FlowControl,
  stepTokens: number,
  input: number,
): GroupCapacity {
  const prompt = Math.max(1, input);
  const msPerToken = flow.prefillMs(stepTokens) / stepTokens;
  return {
    rps: (TARGET_BUSY * 1000) / (prompt * msPerToken),
    streams: Math.max(1, stepTokens / prompt),
  };
}

/**
 * `groupCapacity` held to the tightest gap objective among `classes` (Infinity when none sets
 * one): what a host hands its `ScaleAdvisor`.
 */
export function capacityModel(
  flow: FlowControl,
  classes: Readonly<Record<SloClassName, SloClass>>,
  /** Disaggregated: the group decodes, a prefill pool computes its prompts. */
  prefilledElsewhere = false,
  /** The replicas' measured pace now (`ReplicaLedger.meanPace`). */
  pace: () => number = () => 1,
): (input: number, output: number) => GroupCapacity {
  let itl = Infinity;
  for (const c of Object.values(classes)) itl = Math.min(itl, c.objectives.itlP99Ms ?? Infinity);
  return (input, output) =>
    groupCapacity(flow, itl, input, output, prefilledElsewhere ? 1 : input, pace());
}
