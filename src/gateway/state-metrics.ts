/**
 * The Prometheus metrics of what the gateway keeps beyond a request, on its registry: whether
 * the shared store answers, the saves of what it learned, the Responses API's kept responses by
 * operation and result (closed sets) and those it holds in memory, the policy in force and its
 * file's reloads (named as Prometheus names its own configuration's).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { PromptLine } from '../core/estimate/prompt-scale.ts';
import type { PromptScript } from '../core/request/request.ts';

/** What became of one operation on a kept response. */
export type KeptResult = 'ok' | 'none' | 'too_large' | 'unavailable';

export class StateMetrics {
  readonly storeUp: Gauge;
  readonly learnedSaves: Counter<'result'>;
  readonly learnedRestored: Gauge;
  readonly kept: Counter<'op' | 'result'>;
  readonly backgroundEnded: Counter<'status'>;
  readonly backgroundLost: Counter;
  readonly handovers: Counter<'op'>;
  readonly truncated: Counter;
  readonly truncatedItems: Counter;
  readonly policy: Gauge<'policy' | 'policy_revision'>;
  readonly policyReloads: Counter<'result'>;
  readonly policyReloadOk: Gauge;
  readonly policyReloadAt: Gauge;
  readonly #registers: Registry[];

  constructor(registry: Registry) {
    const registers = [registry];
    this.#registers = registers;
    this.storeUp = new Gauge({
      name: 'goodput_shared_store_up',
      help: '1 while the shared state store (Redis, or memory) answers, else 0.',
      registers,
    });
    this.learnedSaves = new Counter({
      name: 'goodput_learned_state_saves_total',
      help: 'Saves of what the gateway learned (--learned-state), by result (ok, error).',
      labelNames: ['result'],
      registers,
    });
    this.learnedRestored = new Gauge({
      name: 'goodput_learned_state_restored',
      help: '1 when this gateway started from saved learned state (--learned-state), 0 when cold.',
      registers,
    });
    this.kept = new Counter({
      name: 'goodput_kept_responses_total',
      help: "Operations on the Responses API's kept responses (op: save, load, delete), by result: ok, none (no such response), too_large (not kept), unavailable (the shared store down).",
      labelNames: ['op', 'result'],
      registers,
    });
    this.backgroundEnded = new Counter({
      name: 'goodput_background_responses_total',
      help: "The Responses API's background responses this gateway ran that ended, by status: completed, incomplete (at max_output_tokens), failed (expired in the queue, upstream failed, cut by a drain), cancelled.",
      labelNames: ['status'],
      registers,
    });
    this.backgroundLost = new Counter({
      name: 'goodput_background_responses_lost_total',
      help: 'Background responses this gateway found queued or in progress on a replica no longer alive (killed, crashed), and kept failed (runner_lost).',
      registers,
    });
    this.handovers = new Counter({
      name: 'goodput_background_handovers_total',
      help: "Background responses still queued at this gateway's drain, handed to the replicas serving (op=handed) or not, the store refusing (not_handed: left queued, its order kept, for the replica that finds this one gone to hand over); and those this gateway took from a drained one: run here (adopted), refused by admission here and kept failed (refused), found ended or deleted meanwhile (dropped), or that failed here for a fault and are left to be taken for lost (failed); and those queued on a replica gone without a drain that this one found, and handed over by the order kept as they queued (reclaimed).",
      labelNames: ['op'],
      registers,
    });
    this.truncated = new Counter({
      name: 'goodput_responses_truncated_total',
      help: 'Responses API requests (truncation: auto) whose conversation was cut from its beginning to fit the context.',
      registers,
    });
    this.truncatedItems = new Counter({
      name: 'goodput_responses_truncated_items_total',
      help: 'Conversation items those requests dropped from their beginning.',
      registers,
    });
    this.policy = new Gauge({
      name: 'goodput_policy_info',
      help: 'The policy in force (value 1), by name and revision.',
      labelNames: ['policy', 'policy_revision'],
      registers,
    });
    this.policyReloads = new Counter({
      name: 'goodput_policy_reloads_total',
      help: 'Reloads of the policy file (SIGHUP, POST /admin/policy/reload), by result: applied, unchanged, refused (it changes what only a restart applies), invalid, error (not read: no thread to read it on).',
      labelNames: ['result'],
      registers,
    });
    this.policyReloadOk = new Gauge({
      name: 'goodput_policy_last_reload_successful',
      help: '1 when the last reload of the policy file (or the start) put it in force, 0 when the file was refused or invalid: the file is not what runs.',
      registers,
    });
    this.policyReloadAt = new Gauge({
      name: 'goodput_policy_last_reload_success_timestamp_seconds',
      help: 'When the policy file was last put in force (the start, or a reload), in Unix seconds.',
      registers,
    });
  }

  /** The background responses this gateway runs now, read at scrape time (background.ts). */
  backgroundRunning(read: () => number): void {
    new Gauge({
      name: 'goodput_background_responses_running',
      help: "The Responses API's background responses this gateway runs now: queued, deferred or streaming.",
      registers: this.#registers,
      collect() {
        this.set(read());
      },
    });
  }

  /** What an image by URL is planned as, read at scrape time (url-image-tokens.ts). */
  urlImageTokens(read: () => number): void {
    new Gauge({
      name: 'goodput_url_image_planned_tokens',
      help: 'Prompt tokens an image by URL is planned as under --image-tokens qwen2-vl: url_tokens until the backends have counted 20 requests with such images, then the p90 of what the last 256 took.',
      registers: this.#registers,
      collect() {
        this.set(read());
      },
    });
  }

  /** The lines prompt estimates are scaled by, read at scrape time (prompt-scale.ts). */
  promptScale(read: () => Readonly<Record<PromptScript, PromptLine>>): void {
    const terms = [
      [
        'slope',
        "Backend prompt tokens per token of the gateway's estimate, by script, as learned from the backends' counts (1 until 20 have been counted).",
      ],
      [
        'intercept_tokens',
        "Prompt tokens the backends count beyond slope × the gateway's estimate (the chat template's own), by script.",
      ],
      [
        'pairs',
        'Counted prompts the line was fitted to, each weighing half as much 256 prompts later, by script.',
      ],
    ] as const;
    for (const [term, help] of terms) {
      new Gauge({
        name: `goodput_prompt_scale_${term}`,
        help,
        labelNames: ['script'],
        registers: this.#registers,
        collect() {
          for (const [script, line] of Object.entries(read())) {
            const value =
              term === 'slope' ? line.slope : term === 'pairs' ? line.weight : line.intercept;
            this.set({ script }, value);
          }
        },
      });
    }
  }

  /** The kept responses this process holds in memory, read at scrape time. */
  keptInMemory(read: () => { readonly count: number; readonly bytes: number }): void {
    new Gauge({
      name: 'goodput_kept_responses_memory',
      help: 'Kept responses this process holds in memory (without --redis, or kept while it was down), some maybe past their TTL.',
      registers: this.#registers,
      collect() {
        this.set(read().count);
      },
    });
    new Gauge({
      name: 'goodput_kept_responses_memory_bytes',
      help: 'Bytes of the kept responses this process holds in memory, at most --responses-memory.',
      registers: this.#registers,
      collect() {
        this.set(read().bytes);
      },
    });
  }
}
