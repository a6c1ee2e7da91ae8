/**
 * A request's choices (`n`), as vLLM V1 serves them: one generation per choice, each its own
 * request in the engine with the same prompt — the prefix cache has the first compute it and the
 * rest find it (`prefixCachedOnAllocation`) — and their events read as one stream, each tagged
 * with its choice. Main rules: all or none; a choice the engine refuses withdraws those already
 * submitted, and a reader that stops early cancels every choice still running. The request's
 * injected faults are drawn once and carried by its first choice: a failure refuses it before
 * any choice runs, a crash cuts its stream, a stall pauses its first choice.
 */
import { EventChannel } from './event-channel.ts';
import type { Generation, GenerationEvent } from './generation.ts';
import type { GenerationRequest, SimulatedBackend, SubmitResult } from './simulated-backend.ts';
import { SPARED } from './request-plan.ts';

interface ChoiceEvent {
  readonly choice: number;
  readonly ev: GenerationEvent;
}

export type ChoicesResult =
  | { readonly ok: true; readonly generations: readonly Generation[] }
  | Extract<SubmitResult, { ok: false }>;

/**
 * Submits `n` generations of one request: all accepted, or none (the first refusal's reason).
 * Several only where prompt blocks are cached as allocated (V1): that is how they share one.
 */
export function submitChoices(
  backend: SimulatedBackend,
  req: GenerationRequest,
  n: number,
): ChoicesResult {
  if (n > 1 && backend.config.prefixCachedOnAllocation !== true)
    return { ok: false, reason: 'choices_unsupported' };
  const generations: Generation[] = [];
  const faults = backend.drawFaults();
  for (let i = 0; i < n; i++) {
    const r = backend.submit(req, i === 0 ? faults : SPARED);
    if (!r.ok) {
      for (const g of generations) g.cancel();
      return r;
    }
    generations.push(r.generation);
  }
  return { ok: true, generations };
}

/**
 * The choices' events as the engine emits them, each with its choice's index; ends once every
 * choice's has. Leaving the loop early cancels the choices still running.
 */
async function* choiceEvents(gens: readonly Generation[]): AsyncGenerator<ChoiceEvent> {
  const merged = new EventChannel<ChoiceEvent>();
  let open = gens.length;
  const pump = async (gen: Generation, choice: number) => {
    try {
      for await (const ev of gen) merged.push({ choice, ev });
    } finally {
      if (--open === 0) merged.end();
    }
  };
  gens.forEach((gen, choice) => void pump(gen, choice));
  try {
    for (;;) {
      const r = await merged.next();
      if (r.done) return;
      yield r.value;
    }
  } finally {
    for (const gen of gens) gen.cancel();
  }
}

export type FinishEvent = Extract<GenerationEvent, { type: 'finish' }>;

/** How a request's choices ended: every one finished, or the request was cut (`tokens` out). */
export type ChoicesEnd =
  | { readonly end: 'finished'; readonly finishes: readonly FinishEvent[] }
  | { readonly end: 'crash' | 'closed'; readonly tokens: number };

/**
 * Follows a request's choices to their end, telling `token` and `finished` of each as it comes:
 * finished once every choice has; cut by an injected crash in any, or by the engine closing. One
 * choice is read straight from its generation: no layer between it and the caller per token.
 */
export async function followChoices(
  gens: readonly Generation[],
  on: {
    /** `last`: the finish the token ends its choice with, when it is the last. */
    token(choice: number, text: string, last?: FinishEvent['reason']): void;
    finished?(choice: number, ev: FinishEvent): void;
  },
): Promise<ChoicesEnd> {
  const finishes: FinishEvent[] = [];
  let tokens = 0;
  let left = gens.length;
  /** Takes one event; the end it makes, if it makes one. */
  const take = (choice: number, ev: GenerationEvent): ChoicesEnd | undefined => {
    if (ev.type === 'token') {
      tokens++;
      on.token(choice, ev.text, ev.last);
      return undefined;
    }
    if (ev.type === 'crash') return { end: 'crash', tokens };
    finishes[choice] = ev;
    on.finished?.(choice, ev);
    return --left === 0 ? { end: 'finished', finishes } : undefined;
  };
  if (gens.length === 1) {
    for await (const ev of gens[0]) {
      const end = take(0, ev);
      if (end !== undefined) return end;
    }
  } else {
    for await (const { choice, ev } of choiceEvents(gens)) {
      const end = take(choice, ev);
      if (end !== undefined) return end;
    }
  }
  return { end: 'closed', tokens };
}
