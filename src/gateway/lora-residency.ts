/**
 * The LoRA adapters a vLLM backend holds in its GPU slots, as far as its gauges tell. vLLM
 * reports adapters by request (`vllm:lora_requests_info`'s `running_lora_adapters`: those its
 * running requests use), so an adapter whose requests have all ended leaves the label while it
 * stays loaded until a new adapter evicts it, the least recently used first. Main rule: what was
 * seen running — in a scrape, or answering one of the gateway's own requests — is remembered,
 * most recent last, at most `max_lora` of them (the slots' own order), so routing still finds
 * an adapter where it was last loaded.
 */
export class LoraResidency {
  #held: readonly string[] = [];

  /** The adapters held after a scrape saw `running` on a backend of `maxLoras` slots. */
  seen(running: readonly string[], maxLoras: number): readonly string[] {
    const next = this.#held.filter((a) => !running.includes(a)).concat(running);
    const held = next.slice(Math.max(0, next.length - Math.max(maxLoras, running.length)));
    const same = held.length === this.#held.length && held.every((a, i) => a === this.#held[i]);
    if (!same) this.#held = held;
    return this.#held;
  }
}
