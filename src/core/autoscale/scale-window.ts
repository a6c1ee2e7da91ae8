/**
 * What an autoscaler host counts between two ticks — requests offered and their prompt sizes,
 * requests completed, the good among them, and their output sizes — turned into the rates and
 * the request mix a tick's signals carry. The simulator and the gateway count the same way.
 * The mix's output sizes are those completed (what a control plane sees), never a workload's
 * hidden lengths; the last mix is kept through a tick with nothing to show.
 */
import type { Ms } from '../request/units.ts';
import type { SloClass, SloClassName } from '../request/slo-classes.ts';
import type { FlowControl } from '../routing/flow-control.ts';

export interface WindowRates {
  readonly arrivalRps: number;
  readonly goodRps: number;
  /** Mean prompt and output tokens of the recent requests; null before any has completed. */
  readonly mix: { readonly input: number; readonly output: number } | null;
}

export class ScaleWindow {
  private arrivals = 0;
  private inputTokens = 0;
  private completions = 0;
  private outputTokens = 0;
  private good = 0;
  private mix: { input: number; output: number } | null = null;

  /** A request was offered (its first attempt) with a prompt of this size. */
  arrived(inputTokens: number): void {
    this.arrivals++;
    this.inputTokens += inputTokens;
  }

  /** A request completed with this many output tokens, good or not. */
  completed(outputTokens: number, good: boolean): void {
    this.completions++;
    this.outputTokens += outputTokens;
    if (good) this.good++;
  }

  /** The rates over the `spanMs` since the last take, and the mix; starts the next window. */
  take(spanMs: Ms): WindowRates {
    const seconds = spanMs / 1000;
    if (this.arrivals > 0 && this.completions > 0) {
      this.mix = {
        input: this.inputTokens / this.arrivals,
        output: this.outputTokens / this.completions,
      };
    }
    const rates = {
      arrivalRps: this.arrivals / seconds,
      goodRps: this.good / seconds,
      mix: this.mix,
    };
    this.arrivals = 0;
    this.inputTokens = 0;
    this.completions = 0;
    this.outputTokens = 0;
    this.good = 0;
    return rates;
  }
}

/**
 * One replica group's capacity at SLO for requests of these mean sizes, as the step-time model
 * predicts: the streams flow control lets it hold within `itlSloMs` (the tightest gap objective
 * served), over how long one runs there — its prefill, then its output at that batch's step
 * time. In requests per second.
 */
export function groupCapacityRps(
  flow: FlowControl,
  itlSloMs: Ms,
  input: number,
  output: number,
): number {
  const context = input + output / 2;
  const batch = flow.steadyBatch(itlSloMs, context, input + output);
  const runMs =
    flow.prefillMs(Math.max(1, input)) + output * flow.decodeStepMs(batch, batch * context);
  return runMs > 0 ? (batch * 1000) / runMs : 0;
}

/**
 * `groupCapacityRps` held to the tightest gap objective among `classes` (Infinity when none sets
 * one): what a host hands its `ScaleAdvisor`.
 */
export function capacityModel(
  flow: FlowControl,
  classes: Readonly<Record<SloClassName, SloClass>>,
): (input: number, output: number) => number {
  let itl = Infinity;
  for (const c of Object.values(classes)) itl = Math.min(itl, c.objectives.itlP99Ms ?? Infinity);
  return (input, output) => groupCapacityRps(flow, itl, input, output);
}
