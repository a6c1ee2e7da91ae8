/**
 * The `queueing` section of a policy: the order admitted requests wait in within a priority band
 * — `vtc` (tenant fairness by virtual token counters, the default; with one tenant it is FIFO),
 * `scored` (those counters weighed with urgency, age and interference: `queueing.score`) or
 * `fifo` — and the cost function the counters charge, whose revision labels their metrics.
 */
import { z } from 'zod';
import { DEFAULT_SERVICE_COST, type ServiceCost } from '../queueing/virtual-token-counter.ts';
import type { CandidateScore } from '../queueing/fair-queue.ts';

const weight = z.number().min(0);

export const queueingSchema = z
  .object({
    order: z.enum(['vtc', 'scored', 'fifo']).optional(),
    score: z
      .object({
        virtual_service: weight.optional(),
        urgency: weight.optional(),
        age: weight.optional(),
        interference: weight.optional(),
      })
      .strict()
      .optional(),
    cost: z
      .object({
        revision: z.string().min(1).optional(),
        input_weight: weight.optional(),
        output_weight: weight.optional(),
        charge_cached_input: z.boolean().optional(),
        kv_gib_second_weight: weight.optional(),
      })
      .strict()
      .refine((c) => (c.input_weight ?? 1) + (c.output_weight ?? 1) > 0, {
        message: 'input_weight and output_weight not both 0',
      })
      .optional(),
  })
  .strict();

export interface QueueingConfig {
  readonly order: 'vtc' | 'scored' | 'fifo';
  readonly cost: ServiceCost;
  /** The candidate score's weights (`order: scored`). */
  readonly score: CandidateScore;
}

export const DEFAULT_SCORE: CandidateScore = {
  virtualService: 1,
  urgency: 4,
  age: 0,
  interference: 0.5,
};

export function resolveQueueing(q: z.infer<typeof queueingSchema> | undefined): QueueingConfig {
  const d = DEFAULT_SERVICE_COST;
  const w = q?.score;
  return {
    order: q?.order ?? 'vtc',
    score: {
      virtualService: w?.virtual_service ?? DEFAULT_SCORE.virtualService,
      urgency: w?.urgency ?? DEFAULT_SCORE.urgency,
      age: w?.age ?? DEFAULT_SCORE.age,
      interference: w?.interference ?? DEFAULT_SCORE.interference,
    },
    cost: {
      revision: q?.cost?.revision ?? d.revision,
      inputWeight: q?.cost?.input_weight ?? d.inputWeight,
      outputWeight: q?.cost?.output_weight ?? d.outputWeight,
      chargeCachedInput: q?.cost?.charge_cached_input ?? d.chargeCachedInput,
      kvGibSecondWeight: q?.cost?.kv_gib_second_weight ?? d.kvGibSecondWeight,
    },
  };
}
