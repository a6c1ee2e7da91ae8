/**
 * What an image by URL takes in the served model, learned from the backends' own counts. Under a
 * size rule (`--image-tokens qwen2-vl`, `pixtral`, `internvl`…) the gateway reads an inline image's size, but never
 * fetches an image by URL: it plans one as `url_tokens` (by default the most any image can
 * take) until the backends have counted 20 requests that held such images. From then on it plans
 * one as the p90 of what the last 256 took: each request's prompt as its backend counted it,
 * less the rest of its plan (its text as the backends count such a text, its inline images),
 * over its images by URL. A
 * prompt cut by `truncate_prompt_tokens` says nothing of its images and is not counted. The same
 * quantile and warm-up as the output lengths' (`estimate.min_samples`'s default), for the same
 * reason: a plan that is seldom short, learned from what this fleet's clients send. The samples
 * are kept with the output lengths (`--learned-state`), so a restarted gateway plans from them.
 */
import { unsizedImages } from '../openai/image-parts.ts';
import type { SizeRule, SizeRuleName } from '../openai/image-size.ts';
import type { RuleParams } from '../openai/image-processors.ts';
import { estimateChatPrompt, type ChatPrompt } from '../openai/prompt-tokens.ts';
import type { PromptScale } from '../core/estimate/prompt-scale.ts';
import { URL_IMAGE_SAMPLES } from '../core/estimate/learned-state.ts';

/**
 * The window learned from (all of it kept by `--learned-state`), and the samples before the
 * learned figure is used.
 */
const WINDOW = URL_IMAGE_SAMPLES;
const MIN_SAMPLES = 20;

export class LearnedImageTokens implements SizeRule {
  readonly rule: SizeRuleName;
  readonly params: RuleParams;
  readonly #prior: number;
  readonly #seen = new Float64Array(WINDOW);
  #count = 0;
  #learned: number | undefined;

  constructor(rule: SizeRule) {
    this.rule = rule.rule;
    this.params = rule.params;
    this.#prior = rule.urlTokens;
  }

  /** What an image by URL is planned as now: `url_tokens`, until enough are counted. */
  get urlTokens(): number {
    return this.#learned ?? this.#prior;
  }

  /**
   * A request's end: its backend counted `counted` prompt tokens of `body`, the chat sent, whose
   * text it counts as `scale` says (the estimate's own, without one).
   */
  counted(
    body: { readonly messages?: unknown; readonly truncate_prompt_tokens?: unknown },
    counted: number,
    scale?: Pick<PromptScale, 'tokens'>,
  ): void {
    if (body.truncate_prompt_tokens != null) return;
    const { count: images, tokens: byUrl } = unsizedImages(body.messages, this);
    if (images === 0) return;
    // The plan as estimated, before it was held under the context (prompt-view.ts): its text,
    // as its backends count such a text, and its inline images.
    const estimate = estimateChatPrompt({ ...(body as ChatPrompt), imageTokens: this });
    const text = estimate.tokens - estimate.imageTokens;
    const inline = estimate.imageTokens - byUrl;
    const each = (counted - (scale?.tokens(estimate.script, text) ?? text) - inline) / images;
    if (each > 0) this.#add(each);
  }

  /** What it learned from, oldest first: the samples a restarted gateway takes up. */
  samples(): number[] {
    const kept = Math.min(this.#count, WINDOW);
    return Array.from({ length: kept }, (_, i) => this.#seen[(this.#count - kept + i) % WINDOW]);
  }

  /** Takes up `samples` (oldest first) as if counted now: the last `WINDOW` of them. */
  restore(samples: readonly number[]): void {
    for (const each of samples.slice(-WINDOW)) if (each > 0) this.#add(each);
  }

  #add(each: number): void {
    this.#seen[this.#count++ % WINDOW] = each;
    if (this.#count >= MIN_SAMPLES) this.#learned = Math.ceil(p90(this.#seen, this.#count));
  }
}

/** The 90th percentile of the first `count` (at most the window) of `seen`. */
function p90(seen: Float64Array, count: number): number {
  const sorted = seen.slice(0, Math.min(count, seen.length)).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor(0.9 * sorted.length))];
}
