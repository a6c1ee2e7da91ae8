/**
 * Decides, when a request arrives, what the simulated model will do with it: how many tokens it
 * generates and why it stops, and which injected fault (if any) hits it. Main rules: every
 * request draws the same number of values from each seeded stream whatever the settings — a
 * length for each choice, three fault draws — so a seed gives the same lengths with faults on or
 * off; and a request's faults are drawn once, however many choices it has (`drawFaults`), so a
 * rate is a share of requests, as `--help` says.
 */
import type { Rng } from '../core/ports/rng.ts';
import { stopCut, type StopCut } from './stop-strings.ts';

export interface FaultRates {
  /** Fraction of requests answered 500 before any token. */
  readonly failRate: number;
  /** Fraction of requests whose token stream pauses once, half-way, for `stallMs`. */
  readonly stallRate: number;
  readonly stallMs: number;
  /** Fraction of requests cut half-way: the connection drops after some tokens. */
  readonly crashRate: number;
}

export const NO_FAULTS: FaultRates = { failRate: 0, stallRate: 0, stallMs: 0, crashRate: 0 };

/** Which injected faults hit one request. */
export interface DrawnFaults {
  readonly fail: boolean;
  readonly stall: boolean;
  readonly crash: boolean;
}

/** None: a request's further choices, its faults carried by its first. */
export const SPARED: DrawnFaults = { fail: false, stall: false, crash: false };

export interface PlanInput {
  readonly promptTokens: number;
  /** The client's output limit; none: whatever room the context leaves. */
  readonly maxTokens?: number;
  /** Generate exactly the limit (vLLM's ignore_eos). */
  readonly ignoreEos: boolean;
  /** No end of sequence before this many tokens (vLLM's min_tokens). */
  readonly minTokens?: number;
  /** vLLM's `stop` strings (none empty), and whether the one met stays in the text. */
  readonly stops?: readonly string[];
  readonly keepStop?: boolean;
  readonly maxModelLen: number;
}

/** How a filler reply ends, as vLLM's finish reasons say it: the filler calls no tool. */
export type FillerFinish = 'stop' | 'length';

export interface RequestPlan {
  /** Tokens the engine is asked for (≥ 1, so the engine can judge the prompt itself). */
  readonly outputTokens: number;
  /** Why the request stops if it runs to the end. */
  readonly finishReason: FillerFinish;
  readonly fail: boolean;
  /** Index of the token the stream pauses before, or null. */
  readonly stallBefore: number | null;
  readonly stallMs: number;
  /** Tokens delivered before the connection is cut, or null. */
  readonly crashAfter: number | null;
  /** Where a stop string ends the reply's text, when one does (stop-strings.ts). */
  readonly cut?: StopCut;
}

/** A natural (end-of-sequence) output length from a uniform draw in [0, 1). */
export type LengthSampler = (u: number) => number;

export class RequestPlanner {
  private readonly lengths: Rng;
  private readonly faults: Rng;
  private readonly rates: FaultRates;
  private readonly sample: LengthSampler;

  constructor(rng: Rng, rates: FaultRates, sample: LengthSampler) {
    this.lengths = rng.fork('lengths');
    this.faults = rng.fork('faults');
    this.rates = rates;
    this.sample = sample;
  }

  /** One request's faults, drawn at its rates. */
  drawFaults(): DrawnFaults {
    const fail = this.faults.next() < this.rates.failRate;
    const stall = this.faults.next() < this.rates.stallRate && this.rates.stallMs > 0;
    const crash = this.faults.next() < this.rates.crashRate;
    return { fail, stall, crash };
  }

  plan(input: PlanInput, faults: DrawnFaults = this.drawFaults()): RequestPlan {
    const natural = this.sample(this.lengths.next());
    const { fail, stall, crash } = faults;

    const room = Math.max(1, input.maxModelLen - input.promptTokens);
    const limit = Math.min(input.maxTokens ?? room, room);
    const eos = Math.max(natural, input.minTokens ?? 0);
    const ends = !input.ignoreEos && eos <= limit;
    const planned = Math.max(1, ends ? eos : limit);
    const cut = stopCut(input.stops ?? [], planned, {
      minTokens: input.minTokens,
      keep: input.keepStop,
    });
    const outputTokens = cut?.tokens ?? planned;
    return {
      outputTokens,
      finishReason: ends || cut !== undefined ? 'stop' : 'length',
      ...(cut === undefined ? {} : { cut }),
      fail,
      stallBefore: stall ? Math.floor(outputTokens / 2) : null,
      stallMs: stall ? this.rates.stallMs : 0,
      crashAfter: crash ? Math.ceil(outputTokens / 2) : null,
    };
  }
}
