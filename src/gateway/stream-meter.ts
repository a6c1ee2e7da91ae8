/**
 * Measures one request as its client sees it through the gateway — TTFT from arrival, every
 * token gap (its p99 exactly, via the kept tail), end to end — with vLLM's definitions, as the
 * simulator's reports do; its `outcome` is judged against its class where the stream ends.
 *
 * A gap is timed where the token leaves, not where it arrives. A running stream's later tokens
 * are written at the end of the loop's turn (`http/turn-writes.ts`), and a turn held long by
 * other work — hundreds of streams to relay, a flood of refusals — adds its length to the gap
 * its client sees, a lateness of the gateway's own making. Timed on arrival, a stream the
 * client saw break its gap objective was counted good. So a later token is `arrived` (counted),
 * and its gap is taken when it was `sent`: two tokens sent in one write reach the client
 * together, the second 0 ms after the first. The first token goes out as it arrives, and its
 * time is the TTFT.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { Ms } from '../core/request/units.ts';
import { TailSamples } from '../core/observe/tail-samples.ts';
import type { FinalState, RequestOutcome } from '../core/observe/request-outcome.ts';
import type { LlmRequest } from '../core/request/request.ts';

export class StreamMeter {
  readonly arrivalMs: Ms;
  firstTokenMs: Ms | undefined;
  /** When the last token sent left the gateway. */
  lastTokenMs: Ms | undefined;
  /** Tokens that reached the gateway, sent or not. */
  tokens = 0;
  /** Tokens that arrived after the first and are not yet sent. */
  #unsent = 0;
  /** When the oldest of them arrived. */
  #unsentSinceMs = 0;
  /** The longest a token waited in the gateway between its arrival and its write. */
  relayMaxMs = 0;
  private readonly tail: TailSamples;
  private gaps = 0;
  private readonly clock: Clock;

  constructor(clock: Clock, arrivalMs: Ms, maxTokens: number) {
    this.clock = clock;
    this.arrivalMs = arrivalMs;
    this.tail = new TailSamples(Math.max(1, maxTokens - 1));
  }

  /**
   * A token reached the gateway. True for the first, timed now (its TTFT); a later one's gap is
   * timed when it is `sent`.
   */
  arrived(): boolean {
    this.tokens++;
    if (this.firstTokenMs === undefined) {
      const now = this.clock.now();
      this.firstTokenMs = now;
      this.lastTokenMs = now;
      return true;
    }
    if (this.#unsent++ === 0) this.#unsentSinceMs = this.clock.now();
    return false;
  }

  /** Whether a token arrived that is not yet sent. */
  get unsent(): boolean {
    return this.#unsent > 0;
  }

  /**
   * The tokens arrived since the last `sent` left for the client at `atMs`: the first after the
   * gap since the last one sent, the rest with it (0 ms). Returns the first's gap, and adds as
   * many gaps as tokens to `each` if given; undefined with none unsent.
   */
  sent(atMs: Ms, each?: (gap: Ms) => void): Ms | undefined {
    const n = this.#unsent;
    if (n === 0 || this.lastTokenMs === undefined) return undefined;
    this.#unsent = 0;
    const held = atMs - this.#unsentSinceMs;
    if (held > this.relayMaxMs) this.relayMaxMs = held;
    const gap = Math.max(0, atMs - this.lastTokenMs);
    this.lastTokenMs = atMs;
    this.gaps += n;
    if (gap > this.tail.floor) this.tail.add(gap);
    each?.(gap);
    for (let i = 1; i < n; i++) {
      if (0 > this.tail.floor) this.tail.add(0);
      each?.(0);
    }
    return gap;
  }

  /**
   * The request as the measurement sees it, ended in `state`: TTFT and E2E from the gateway's
   * arrival, its gaps as they were sent.
   */
  outcome(
    req: LlmRequest,
    state: FinalState,
    outputTokens: number,
    cachedTokens = 0,
  ): RequestOutcome {
    const hasGaps = this.gaps > 0;
    return {
      id: req.id,
      tenant: req.tenant,
      sloClass: req.sloClass,
      state,
      admitted: true,
      inputTokens: req.inputTokens,
      outputTokens,
      cachedTokens,
      ...(this.firstTokenMs === undefined ? {} : { ttftMs: this.firstTokenMs - this.arrivalMs }),
      ...(this.lastTokenMs === undefined ? {} : { e2eMs: this.lastTokenMs - this.arrivalMs }),
      ...(hasGaps ? { itlP99Ms: this.tail.p99(this.gaps), maxStallMs: this.tail.max } : {}),
      relayMaxMs: this.relayMaxMs,
      attempts: 1,
      preemptions: 0,
    };
  }
}
