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

/**
 * One choice's stream, of a request for several (`n`): each is timed as its client reads it, its
 * p99 gap its own.
 */
interface ChoiceStream {
  /** Tokens of it that reached the gateway. */
  tokens: number;
  /** When its last token sent left the gateway; undefined before its first went. */
  lastMs: Ms | undefined;
  /** Its tokens that arrived after the request's first and are not yet sent. */
  unsent: number;
  /** When the oldest of them arrived. */
  unsentSinceMs: Ms;
  /** Its gaps timed, and the largest of them. */
  gaps: number;
  readonly tail: TailSamples;
}

const choiceStream = (capTokens: number): ChoiceStream => ({
  tokens: 0,
  lastMs: undefined,
  unsent: 0,
  unsentSinceMs: 0,
  gaps: 0,
  tail: new TailSamples(Math.max(1, capTokens - 1)),
});

export class StreamMeter {
  readonly arrivalMs: Ms;
  firstTokenMs: Ms | undefined;
  /** When the last token sent left the gateway (of any choice). */
  lastTokenMs: Ms | undefined;
  /** Tokens that reached the gateway, sent or not (every choice's). */
  tokens = 0;
  /** Each choice's stream, the first's at 0; its gaps are its own tokens'. */
  readonly #choices: ChoiceStream[];
  /** The longest a token waited in the gateway between its arrival and its write. */
  relayMaxMs = 0;
  private readonly capTokens: number;
  private readonly clock: Clock;

  /** `capTokens`: the most tokens one choice can stream. */
  constructor(clock: Clock, arrivalMs: Ms, capTokens: number) {
    this.clock = clock;
    this.arrivalMs = arrivalMs;
    this.capTokens = capTokens;
    this.#choices = [choiceStream(capTokens)];
  }

  /**
   * A token of `choice` reached the gateway. True for the request's first, timed now (its
   * TTFT); a later one's gap is timed when it is `sent`.
   */
  arrived(choice = 0): boolean {
    this.tokens++;
    const c = this.#choices[choice] ?? this.#open(choice);
    c.tokens++;
    if (this.firstTokenMs === undefined) {
      const now = this.clock.now();
      this.firstTokenMs = now;
      this.lastTokenMs = now;
      c.lastMs = now;
      return true;
    }
    if (c.unsent++ === 0) c.unsentSinceMs = this.clock.now();
    return false;
  }

  /** Whether a token of `choice` arrived that is not yet sent. */
  unsent(choice = 0): boolean {
    return (this.#choices[choice]?.unsent ?? 0) > 0;
  }

  /** Each choice's tokens so far, in choice order; undefined for a stream of one choice. */
  choiceTokens(): number[] | undefined {
    return this.#choices.length > 1 ? this.#choices.map((c) => c.tokens) : undefined;
  }

  /**
   * The tokens of `choice` arrived since its last `sent` left for the client at `atMs`: the
   * first after the gap since that choice's last one sent (none for its first token), the rest
   * with it (0 ms). Returns the first's gap, and adds as many gaps as timed to `each` if given;
   * undefined with none unsent, or none timed.
   */
  sent(atMs: Ms, each?: (gap: Ms) => void, choice = 0): Ms | undefined {
    const c = this.#choices[choice];
    const n = c?.unsent ?? 0;
    if (n === 0) return undefined;
    c.unsent = 0;
    const held = atMs - c.unsentSinceMs;
    if (held > this.relayMaxMs) this.relayMaxMs = held;
    if (this.lastTokenMs === undefined || atMs > this.lastTokenMs) this.lastTokenMs = atMs;
    const gap = c.lastMs === undefined ? undefined : Math.max(0, atMs - c.lastMs);
    c.lastMs = atMs;
    const tail = c.tail;
    if (gap !== undefined) {
      c.gaps++;
      if (gap > tail.floor) tail.add(gap);
      each?.(gap);
    }
    for (let i = 1; i < n; i++) {
      c.gaps++;
      if (0 > tail.floor) tail.add(0);
      each?.(0);
    }
    return gap;
  }

  #longest(): number {
    let most = 0;
    for (const c of this.#choices) most = Math.max(most, c.tokens);
    return most;
  }

  #open(choice: number): ChoiceStream {
    while (this.#choices.length <= choice) this.#choices.push(choiceStream(this.capTokens));
    return this.#choices[choice];
  }

  /**
   * The request as the measurement sees it, ended in `state`: TTFT and E2E from the gateway's
   * arrival, its gaps as they were sent — of several choices, the worst choice's p99 gap and
   * longest gap, each choice a stream its client reads on its own.
   */
  outcome(
    req: LlmRequest,
    state: FinalState,
    outputTokens: number,
    cachedTokens = 0,
  ): RequestOutcome {
    let p99: Ms | undefined;
    let maxGap = 0;
    for (const c of this.#choices) {
      if (c.gaps === 0) continue;
      const its = c.tail.p99(c.gaps);
      if (p99 === undefined || its > p99) p99 = its;
      maxGap = Math.max(maxGap, c.tail.max);
    }
    return {
      id: req.id,
      tenant: req.tenant,
      sloClass: req.sloClass,
      state,
      admitted: true,
      inputTokens: req.inputTokens,
      outputTokens,
      ...(this.#choices.length > 1 ? { longestChoiceTokens: this.#longest() } : {}),
      cachedTokens,
      ...(this.firstTokenMs === undefined ? {} : { ttftMs: this.firstTokenMs - this.arrivalMs }),
      ...(this.lastTokenMs === undefined ? {} : { e2eMs: this.lastTokenMs - this.arrivalMs }),
      ...(p99 === undefined ? {} : { itlP99Ms: p99, maxStallMs: maxGap }),
      relayMaxMs: this.relayMaxMs,
      attempts: 1,
      preemptions: 0,
    };
  }
}
