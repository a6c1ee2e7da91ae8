/**
 * What a pipeline learned that should outlive it, as a file: the output-length histories, what
 * the gateway learned an image by URL takes (the samples it plans from), and the sums its
 * prompts' scale is fitted to (prompt-scale.ts).
 * Without them a restarted gateway starts cold, and until each class has `estimate.min_samples`
 * ended requests, every request reserves KV for `prior_output_reserve` output tokens: under load
 * that is most of a flood refused for memory (bench/RESULTS.md, "A cold start into long
 * replies"). Versioned JSON, compact, written whole:
 *
 *   { "format": "goodput.learned-state", "version": 1, "saved_at": "<ISO 8601>",
 *     "output_lengths": [ { "class": "interactive", "outputs": [212, 87, …], "capped": [1],
 *                           "ended": 5120, "tenants": [ { "tenant": "acme", … } ] } ],
 *     "url_image_tokens": [1296.5, 980, …],
 *     "prompt_scale": { "latin": { "pairs": 812, "weight": 350.1, "u": 1.9, "r": 271.3,
 *                                  "uu": 0.02, "ur": 1.6 } } }
 *
 * `outputs` are a history's window oldest first, `capped` the indexes of those cut at their
 * max_tokens, `ended` how many of its requests had ended; a tenant's entry with a
 * `reasoning_effort` is its history at that effort, apart from its own; `url_image_tokens`
 * (absent when none were learned) the tokens each counted request's images by URL took, oldest
 * first; `prompt_scale` (absent when no prompt was counted) each script's decayed sums, with
 * u = 1 / estimate and r = counted / estimate. Classes and tenants are arrays, not keys: a tenant
 * may be named anything. Core, without I/O: the gateway's
 * store and the simulator's flags read and write the text.
 */
import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { parseOrThrow } from '../config/validate.ts';
import { SLO_CLASS_NAMES } from '../request/slo-classes.ts';
import { PROMPT_SCRIPTS, REASONING_EFFORTS } from '../request/request.ts';
import type { Ms } from '../request/units.ts';
import type { Learned } from './learned.ts';
import type { ClassSnapshot } from './output-length-model.ts';
import { MAX_WEIGHT, type PromptScaleSums } from './prompt-scale.ts';

export const LEARNED_STATE_FORMAT = 'goodput.learned-state';

export interface LearnedState {
  /** When it was saved (Unix epoch ms). */
  readonly savedAtMs: Ms;
  /** The model it was learned serving; absent in a state saved before it was recorded. */
  readonly model?: string;
  readonly outputLengths: readonly ClassSnapshot[];
  /** What images by URL took, oldest first (`url-image-tokens.ts`); empty when none learned. */
  readonly urlImageTokens: readonly number[];
  /** The sums each script's prompt scale is fitted to; empty when no prompt was counted. */
  readonly promptScale: PromptScaleSums;
}

/** What a gateway learned beside its pipeline's output lengths. */
export interface LearnedBeside {
  /** The model the state is learned serving: its lengths and prompt scale are that model's. */
  readonly model?: string;
  /** What images by URL took, oldest first. */
  readonly urlImageTokens?: readonly number[];
  readonly promptScale?: PromptScaleSums;
}

/** The most samples of what an image by URL took a state keeps. */
export const URL_IMAGE_SAMPLES = 256;

const count = z.number().int().nonnegative();

const history = {
  outputs: z.array(count),
  capped: z.array(count),
  ended: count,
};

/** `capped` indexes `outputs`, and `ended` counts at least the outputs kept. */
function consistent(h: z.infer<z.ZodObject<typeof history>>, ctx: z.RefinementCtx): void {
  const bad = h.capped.findIndex((i) => i >= h.outputs.length);
  if (bad >= 0) {
    ctx.addIssue({
      code: 'custom',
      path: ['capped', bad],
      message: `an index into outputs (< ${h.outputs.length})`,
    });
  }
  if (h.ended < h.outputs.length) {
    ctx.addIssue({
      code: 'custom',
      path: ['ended'],
      message: `at least the ${h.outputs.length} outputs kept`,
    });
  }
}

const sum = z.number().positive();
const scriptSums = z.strictObject({
  pairs: z.number().int().positive(),
  weight: sum.max(MAX_WEIGHT),
  u: sum,
  r: sum,
  uu: sum,
  ur: sum,
});

/**
 * Sums a script's pairs could have made: they weigh no more than their count, and each pair's
 * u = 1 / estimate is at most 1, so u² ≤ u ≤ the weight.
 */
function consistentSums(s: z.infer<typeof scriptSums>, ctx: z.RefinementCtx): void {
  const bounds = [
    ['weight', s.weight, s.pairs, 'pairs'],
    ['u', s.u, s.weight, 'weight'],
    ['uu', s.uu, s.u, 'u'],
  ] as const;
  for (const [field, value, most, of] of bounds) {
    if (value > most)
      ctx.addIssue({ code: 'custom', path: [field], message: `at most ${of}, ${most}` });
  }
}

const stateSchema = z.strictObject({
  format: z.literal(LEARNED_STATE_FORMAT),
  version: z.literal(1),
  saved_at: z.iso.datetime({ offset: true }),
  model: z.string().min(1).optional(),
  output_lengths: z
    .array(
      z
        .strictObject({
          class: z.enum(SLO_CLASS_NAMES),
          ...history,
          tenants: z.array(
            z
              .strictObject({
                tenant: z.string().min(1),
                reasoning_effort: z.enum(REASONING_EFFORTS).optional(),
                ...history,
              })
              .superRefine(consistent),
          ),
        })
        .superRefine(consistent),
    )
    .superRefine((classes, ctx) => {
      const seen = new Set<string>();
      classes.forEach((c, i) => {
        if (seen.has(c.class)) {
          ctx.addIssue({ code: 'custom', path: [i, 'class'], message: 'each class once' });
        }
        seen.add(c.class);
      });
    }),
  url_image_tokens: z.array(z.number().positive()).max(URL_IMAGE_SAMPLES).optional(),
  prompt_scale: z
    .partialRecord(z.enum(PROMPT_SCRIPTS), scriptSums.superRefine(consistentSums))
    .optional(),
});

/** The text of what `learned` holds now, and of what was learned `beside` it, saved at `nowEpochMs`. */
export function learnedStateText(
  learned: Learned,
  nowEpochMs: Ms,
  beside: LearnedBeside = {},
): string {
  return [...learnedStateSlices(learned, nowEpochMs, beside)].join('');
}

/**
 * The same text in slices, one per history, each copied from the model only as it is read: a
 * gateway with thousands of tenants writes its state between its streams' tokens, not in one
 * turn of tens of milliseconds (bench/RESULTS.md).
 */
export function* learnedStateSlices(
  learned: Learned,
  nowEpochMs: Ms,
  beside: LearnedBeside = {},
): Generator<string> {
  const savedAt = new Date(nowEpochMs).toISOString();
  const model = beside.model === undefined ? '' : `"model":${JSON.stringify(beside.model)},`;
  yield `{"format":"${LEARNED_STATE_FORMAT}","version":1,"saved_at":"${savedAt}",${model}"output_lengths":[`;
  let classes = 0;
  for (const { cls, outputs, capped, ended, tenants } of learned.outputs.snapshotLazily()) {
    const head = JSON.stringify({ class: cls, outputs, capped, ended });
    yield `${classes++ === 0 ? '' : ','}${head.slice(0, -1)},"tenants":[`;
    let n = 0;
    for (const t of tenants) yield `${n++ === 0 ? '' : ','}${JSON.stringify(t)}`;
    yield ']}';
  }
  let tail = ']';
  const images = (beside.urlImageTokens ?? []).slice(-URL_IMAGE_SAMPLES);
  if (images.length > 0) tail += `,"url_image_tokens":${JSON.stringify(images)}`;
  const scale = beside.promptScale ?? {};
  if (Object.keys(scale).length > 0) tail += `,"prompt_scale":${JSON.stringify(scale)}`;
  yield `${tail}}`;
}

/**
 * Reads learned state from its text; anything else is a ConfigError naming the field and the
 * value (`output_lengths[0].capped[2]: expected an index into outputs (< 40), got 41`).
 */
export function parseLearnedState(text: string): LearnedState {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ConfigError('(root)', `JSON (${(e as Error).message})`, text.slice(0, 40));
  }
  const s = parseOrThrow(stateSchema, json);
  return {
    savedAtMs: Date.parse(s.saved_at),
    ...(s.model === undefined ? {} : { model: s.model }),
    outputLengths: s.output_lengths.map(({ class: cls, outputs, capped, ended, tenants }) => ({
      cls,
      outputs,
      capped,
      ended,
      tenants,
    })),
    urlImageTokens: s.url_image_tokens ?? [],
    promptScale: s.prompt_scale ?? {},
  };
}

/** What a restored state held: when it was saved, outputs kept per class, tenants kept. */
export interface RestoredSummary {
  readonly saved_at: string;
  readonly classes: Readonly<Record<string, number>>;
  readonly tenants: number;
}

/**
 * Takes `learned` up where the state left off (see OutputLengthModel.restore), and notes in it
 * what it was taken up from (reports say a run did not start cold).
 */
export function restoreLearned(learned: Learned, state: LearnedState): RestoredSummary {
  learned.outputs.restore(state.outputLengths);
  learned.restored = {
    saved_at: new Date(state.savedAtMs).toISOString(),
    classes: Object.fromEntries(state.outputLengths.map((c) => [c.cls, c.outputs.length])),
    tenants: state.outputLengths.reduce((n, c) => n + c.tenants.length, 0),
  };
  return learned.restored;
}
