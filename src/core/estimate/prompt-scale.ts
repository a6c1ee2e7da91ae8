/**
 * The gateway's prompt estimate (4 Latin characters a token, and so on by script:
 * openai/text-weight.ts) held to what the served model's tokenizer and chat template make of
 * it, learned from the backends' own counts. Each completed request whose prompt was estimated
 * (text, not cut by `truncate_prompt_tokens`, without images) gives a pair: its estimate `x`
 * and the `usage.prompt_tokens` its backend counted, `y`. Per script — prompts all of Latin,
 * Greek or Cyrillic weight, and the rest — a line y ≈ slope · x + intercept is fitted by least
 * squares of each pair's error relative to its size, over the recent pairs, each weighing half
 * as much `HALF_LIFE` pairs later: with r = y / x and u = 1 / x, r ≈ slope + intercept · u, and
 *
 *   intercept = cov(u, r) / var(u)          slope = mean(r) − intercept · mean(u)
 *
 * Relative, since what an error costs scales with the prompt, and so do the errors: a mix of
 * languages in one script, each its own ratio, spreads a long prompt's count far wider than a
 * short one's, and fitted absolute errors a long prompt's noise would decide the template's
 * tokens.
 * The slope is the tokenizer's measure of a weighted character (Llama 3 counts English at 0.77
 * of the estimate, Qwen's or Mistral's tokenizers otherwise); the intercept is what the chat
 * template adds beyond the estimate's 4 tokens a message (Llama 3.1's adds a system header of
 * some 25 tokens to every chat). Until `MIN_SAMPLES` pairs, or while the prompts seen are all
 * of one size (the spread of 1 / x under a tenth of its mean, which leaves the line's tilt
 * unknown), the line goes through the origin at mean(y / x). A slope is kept within [¼, 4], rounded
 * to thousandths and the intercept to whole tokens, so a backend that counts as the estimate
 * (`goodput engine`, the embedded fleet) leaves every prompt exactly as estimated. A pair far
 * off the line (its count outside [¼, 4] times its estimate, give or take 64 tokens) is held
 * to those bounds first: one hostile prompt cannot tilt every tenant's. The sums are kept
 * with the output lengths (`--learned-state`): a restarted gateway fits on where it left off.
 * A prompt with images is planned by its text's line, and teaches it nothing.
 * Deterministic: no clock, no randomness.
 */
import { PROMPT_SCRIPTS, type PromptScript } from '../request/request.ts';
import type { Tokens } from '../request/units.ts';

/** Pairs after which a pair weighs half as much. */
export const HALF_LIFE = 256;
/** Pairs a script needs before its line is used (until then the estimate stands). */
export const MIN_SAMPLES = 20;
const DECAY = 2 ** (-1 / HALF_LIFE);
/** The most a script's pairs weigh together, however many: 1 / (1 − 2^(−1/HALF_LIFE)). */
export const MAX_WEIGHT = 1 / (1 - DECAY);
const MIN_SLOPE = 0.25;
const MAX_SLOPE = 4;
/** Tokens of template a count may hold beyond its bounded ratio to the estimate. */
const SLACK_TOKENS = 64;
/** Prompts this alike in size leave the line's tilt unknown: their spread ÷ their mean. */
const MIN_SPREAD = 0.1;

/** The line a script's prompts are scaled by: counted ≈ slope · estimate + intercept. */
export interface PromptLine {
  readonly slope: number;
  readonly intercept: Tokens;
  /** The pairs it was fitted to, each weighed by its age (≤ 1 / (1 − 2^(−1/HALF_LIFE))). */
  readonly weight: number;
}

const IDENTITY: PromptLine = { slope: 1, intercept: 0, weight: 0 };

/**
 * One script's decayed sums, as kept across restarts: with u = 1 / estimate and
 * r = counted / estimate, the weight of the pairs and their sums of u, r, u² and u · r, and
 * how many pairs were counted.
 */
export interface ScriptSums {
  readonly pairs: number;
  readonly weight: number;
  readonly u: number;
  readonly r: number;
  readonly uu: number;
  readonly ur: number;
}

/** The sums of each script that has counted a prompt. */
export type PromptScaleSums = Readonly<Partial<Record<PromptScript, ScriptSums>>>;

/**
 * Decayed sums of one script's pairs, as ratios: r = y / x against u = 1 / x, so the line
 * r = slope + intercept · u is y = slope · x + intercept, fitted to each prompt's error
 * relative to its size.
 */
class Sums {
  w = 0;
  n = 0;
  u = 0;
  r = 0;
  uu = 0;
  ur = 0;
  line: PromptLine = IDENTITY;

  add(x: number, y: number): void {
    const u = 1 / x;
    const r = y / x;
    this.w = this.w * DECAY + 1;
    this.u = this.u * DECAY + u;
    this.r = this.r * DECAY + r;
    this.uu = this.uu * DECAY + u * u;
    this.ur = this.ur * DECAY + u * r;
    if (++this.n >= MIN_SAMPLES) this.line = this.fit();
  }

  sums(): ScriptSums {
    const { n: pairs, w: weight, u, r, uu, ur } = this;
    return { pairs, weight, u, r, uu, ur };
  }

  restore(s: ScriptSums): void {
    ({ pairs: this.n, weight: this.w, u: this.u, r: this.r, uu: this.uu, ur: this.ur } = s);
    this.line = this.n >= MIN_SAMPLES ? this.fit() : IDENTITY;
  }

  private fit(): PromptLine {
    const mu = this.u / this.w;
    const mr = this.r / this.w;
    const varU = Math.max(0, this.uu / this.w - mu * mu);
    const tilted = varU > (MIN_SPREAD * mu) ** 2;
    const intercept = tilted ? Math.round((this.ur / this.w - mu * mr) / varU) : 0;
    const slope = Math.min(MAX_SLOPE, Math.max(MIN_SLOPE, mr - intercept * mu));
    return { slope: Math.round(slope * 1000) / 1000, intercept, weight: this.w };
  }
}

export class PromptScale {
  readonly #scripts: Record<PromptScript, Sums> = { latin: new Sums(), other: new Sums() };

  /** A request's end: its prompt, estimated at `estimated` tokens, was counted as `counted`. */
  observe(script: PromptScript, estimated: Tokens, counted: Tokens): void {
    if (!(estimated > 0 && counted > 0)) return;
    const y = Math.min(MAX_SLOPE * estimated + SLACK_TOKENS, counted);
    this.#scripts[script].add(estimated, Math.max(MIN_SLOPE * estimated - SLACK_TOKENS, y));
  }

  /** The tokens a prompt estimated at `estimated` is planned as: at least 1. */
  tokens(script: PromptScript, estimated: Tokens): Tokens {
    const { slope, intercept } = this.#scripts[script].line;
    if (slope === 1 && intercept === 0) return estimated;
    return Math.max(1, Math.ceil(slope * estimated + intercept));
  }

  /** The most tokens a prompt estimated at no more than `estimated` is planned as, by any line. */
  mostTokens(estimated: Tokens): Tokens {
    return Math.max(this.tokens('latin', estimated), this.tokens('other', estimated));
  }

  /** Each script's sums that has counted a prompt, to be taken up by a restarted gateway. */
  sums(): PromptScaleSums {
    const kept: Partial<Record<PromptScript, ScriptSums>> = {};
    for (const script of PROMPT_SCRIPTS) {
      if (this.#scripts[script].n > 0) kept[script] = this.#scripts[script].sums();
    }
    return kept;
  }

  /** Takes up the sums saved by `sums()`: the lines fitted to them, and fitted on from them. */
  restore(sums: PromptScaleSums): void {
    for (const script of PROMPT_SCRIPTS) {
      const s = sums[script];
      if (s !== undefined) this.#scripts[script].restore(s);
    }
  }

  /** Each script's line now (the estimate's own, slope 1, until it has learned one). */
  lines(): Readonly<Record<PromptScript, PromptLine>> {
    return { latin: this.#scripts.latin.line, other: this.#scripts.other.line };
  }
}
