/**
 * The engine flags `simulate`, `compare`, `engine` and `serve` share — vLLM's names and
 * defaults — and their translation into an `EngineSpec`. Each value is validated as parsed.
 */
import { Option, type Command } from 'commander';
import { ConfigError, isConfigError } from '../core/errors.ts';
import {
  buildEngineConfig,
  DEFAULT_LORA_LOAD_MS,
  ENGINE_DEFAULTS as D,
  plannedProfile,
  type EngineSpec,
} from '../engine/engine-spec.ts';
import { DEFAULT_ENGINE_VERSION, ENGINE_VERSIONS } from '../engine/engine-versions.ts';
import { GPUS, MODELS } from '../engine/hardware.ts';
import {
  fraction,
  nonNegativeNumber,
  oneOf,
  positiveAtMost,
  positiveInt,
  positiveNumber,
} from './parse-flags.ts';
import { parseImageTokens } from '../openai/image-size.ts';

/**
 * `--image-tokens`, of a server (`serve`, `engine`): the served model takes images, each the
 * prompt tokens its processor makes of it, which admission plans and prefix caching counts
 * (openai/image-size.ts).
 */
export function imageTokensOption(): Option {
  return new Option(
    '--image-tokens <n|rule>',
    "the served model takes images, each as many prompt tokens as its processor makes: a figure (LLaVA-1.5: 576; Gemma 3: 256), or a rule by the image's size, read from an inline image's header: qwen2-vl (Qwen2-VL, Qwen2.5-VL) or qwen3-vl (Qwen3-VL, Qwen3.5) with :min_pixels=N,max_pixels=N as vLLM's --mm-processor-kwargs, pixtral (Pixtral-12B) or mistral3 (Mistral Small 3.1, 3.2) with :max_image_size=N,patch_size=N, internvl (InternVL2, 2.5, 3) with :min_dynamic_patch=N,max_dynamic_patch=N,use_thumbnail=0|1; each with url_tokens=N for an image by URL, whose size the gateway cannot read, default the most one can take); default: none, and an image is refused by name",
  ).argParser((v: string) => parseImageTokens(v));
}

/**
 * `--max-body-mib`, of a server (`serve`, `engine`): the largest request body it reads; an inline
 * image is most of one. Bytes, from its MiB.
 */
export function maxBodyOption(): Option {
  return new Option(
    '--max-body-mib <MiB>',
    'the largest request body read, in MiB (inline images count); a larger one is a 413',
  )
    .argParser(positiveNumber('--max-body-mib'))
    .default(4);
}

export const mebibytes = (mib: number): number => Math.floor(mib * 1024 * 1024);

export function addEngineFlags(cmd: Command): Command {
  return cmd
    .option('--model <name>', `model: ${Object.keys(MODELS).join(' | ')}`, D.model)
    .option('--gpu <name>', `GPU type: ${Object.keys(GPUS).join(' | ')}`, D.gpu)
    .option('--tp <n>', 'tensor-parallel GPUs per replica', positiveInt('--tp'), D.tp)
    .option(
      '--profile <name>',
      'timing profile: MODEL/GPU/tpN, or const:step_ms=10, or const:prefill_ms_per_token=X,decode_step_ms=Y (default: fitted for model/gpu/tp)',
    )
    .option(
      '--engine-version <name>',
      `vLLM the replicas behave as (default: the policy's engine.version, else ${DEFAULT_ENGINE_VERSION}): ${Object.values(
        ENGINE_VERSIONS,
      )
        .map((v) => `${v.name} (${v.summary})`)
        .join('; ')}`,
      oneOf('--engine-version', Object.keys(ENGINE_VERSIONS)),
    )
    .option(
      '--max-model-len <n>',
      "longest sequence (prompt + output) served, vLLM max_model_len (default: the model's context)",
      positiveInt('--max-model-len'),
    )
    .option(
      '--max-num-seqs <n>',
      "engine's max running sequences, vLLM max_num_seqs (default: the engine version's)",
      positiveInt('--max-num-seqs'),
    )
    .option(
      '--max-num-batched-tokens <n>',
      "engine's token budget per step, vLLM max_num_batched_tokens (default: the engine version's)",
      positiveInt('--max-num-batched-tokens'),
    )
    .addOption(
      // Goodput's first spelling of vLLM's flag, kept for the scripts that use it.
      new Option('--max-batched-tokens <n>')
        .argParser(positiveInt('--max-batched-tokens'))
        .conflicts('maxNumBatchedTokens')
        .hideHelp(),
    )
    .option(
      '--enable-chunked-prefill',
      "chunk long prompts and mix them with decodes (default: the engine version's)",
    )
    .option('--no-enable-chunked-prefill', 'vLLM 0.6 and older: steps of whole prompts first')
    .option(
      '--num-scheduler-steps <n>',
      'vLLM 0.6 multi-step: decode steps per scheduling (default 1)',
      positiveInt('--num-scheduler-steps'),
    )
    .option(
      '--long-prefill-token-threshold <n>',
      "vLLM V1: the most prompt tokens one sequence prefills in a step (default: no cap beyond the step's budget)",
      positiveInt('--long-prefill-token-threshold'),
    )
    .option(
      '--max-iteration-ms <ms>',
      "Goodput's engine policy (not a vLLM option): cut a step's prefill so the step, with its decodes, is predicted within this many ms, protecting running streams' token gaps (chunked prefill only)",
      positiveNumber('--max-iteration-ms'),
    )
    .option(
      '--scheduling-policy <policy>',
      "vLLM's engine queue order: fcfs | priority (the request's class band, then arrival; the lowest priority is preempted first)",
      oneOf('--scheduling-policy', ['fcfs', 'priority'] as const),
    )
    .option(
      '--ttft-boost-ms <ms>',
      "Goodput's engine policy, with --scheduling-policy priority: a waiting request this close to its first-token deadline is admitted before every other",
      positiveNumber('--ttft-boost-ms'),
    )
    .option(
      '--preemption-victims <choice>',
      "which running sequence is preempted when KV runs out: newest (vLLM: the most recently admitted; under priority scheduling the lowest priority first) | slack (Goodput's engine policy: among the lowest priority, the one whose TTFT, token-gap or completion objective a stall costs least)",
      oneOf('--preemption-victims', ['newest', 'slack'] as const),
    )
    .option(
      '--decode-token-budget <n>',
      "Goodput's engine policy (not a vLLM option): the most decodes one step carries, the front of the batch first (under priority scheduling the highest priority: lower classes decode on what is left); the rest sit the step out with their KV",
      positiveInt('--decode-token-budget'),
    )
    .option(
      '--tool-kv <mode>',
      'KV of a sequence paused for a tool call: auto (keep while tool calls return within --tool-keep-ms and KV is not short, else the cheaper of swap and drop) | keep | swap | drop',
      oneOf('--tool-kv', ['auto', 'keep', 'swap', 'drop'] as const),
    )
    .option(
      '--tool-keep-ms <ms>',
      'under --tool-kv auto, the expected tool wait up to which KV is kept (default 2000)',
      positiveNumber('--tool-keep-ms'),
    )
    .option(
      '--preemption <mode>',
      'recompute | swap | auto (per victim, whichever is predicted cheaper: prefilling what it computed again, or moving its KV to host and back)',
      oneOf('--preemption', ['recompute', 'swap', 'auto'] as const),
      D.preemption,
    )
    .option('--no-prefix-caching', 'disable the engine prefix cache')
    .option(
      '--kv-blocks <n>',
      'fix KV capacity per replica in 16-token blocks instead of deriving it from memory',
      positiveInt('--kv-blocks'),
    )
    .option(
      '--lora-modules <names...>',
      'LoRA adapters served, by name (vLLM --lora-modules; NAME or NAME=PATH, the path unused): a request whose model names one runs with it',
      loraModules,
    )
    .option(
      '--max-loras <n>',
      'vLLM --max-loras: adapters in GPU slots, and distinct adapters in one batch (default 1)',
      positiveInt('--max-loras'),
    )
    .option(
      '--lora-load-ms <ms>',
      `time to bring an adapter into a GPU slot (Goodput's model, not a vLLM option; default ${DEFAULT_LORA_LOAD_MS})`,
      nonNegativeNumber('--lora-load-ms'),
    )
    .option(
      '--slowdown <f>',
      'replicas take f times the step time of their timing profile, which the control plane is not told (a slower clock or a busy host: a mis-profiled fleet; default 1)',
      positiveAtMost('--slowdown', 1_000),
    )
    .option(
      '--gpu-memory-utilization <f>',
      'fraction of GPU memory for the engine',
      fraction('--gpu-memory-utilization'),
      D.gpuMemoryUtilization,
    );
}

/** `policyVersion`: the policy's `engine.version`, used when the flag is absent. */
export function engineSpecFromFlags(
  o: Record<string, unknown>,
  policyVersion?: string,
): EngineSpec {
  // A request naming the base model asks for no adapter: an adapter of its name would take it.
  const base = (o.servedModelName as string | undefined) ?? (o.model as string);
  if ((o.loraModules as string[] | undefined)?.includes(base)) {
    throw new ConfigError('--lora-modules', `names other than the served model's (${base})`, base);
  }
  return checked({
    model: o.model as string,
    gpu: o.gpu as string,
    tp: o.tp as number,
    profile: o.profile as string | undefined,
    engineVersion: (o.engineVersion as string | undefined) ?? policyVersion ?? D.engineVersion,
    maxModelLen: o.maxModelLen as number | undefined,
    maxNumSeqs: o.maxNumSeqs as number | undefined,
    maxBatchedTokens: (o.maxNumBatchedTokens ?? o.maxBatchedTokens) as number | undefined,
    chunkedPrefill: o.enableChunkedPrefill as boolean | undefined,
    schedulerSteps: o.numSchedulerSteps as number | undefined,
    longPrefillTokenThreshold: o.longPrefillTokenThreshold as number | undefined,
    maxIterationMs: o.maxIterationMs as number | undefined,
    schedulingPolicy: o.schedulingPolicy as EngineSpec['schedulingPolicy'],
    ttftBoostMs: o.ttftBoostMs as number | undefined,
    preemptionVictims: o.preemptionVictims as EngineSpec['preemptionVictims'],
    decodeTokenBudget: o.decodeTokenBudget as number | undefined,
    toolKv: o.toolKv as EngineSpec['toolKv'],
    toolKeepMs: o.toolKeepMs as number | undefined,
    preemption: o.preemption as EngineSpec['preemption'],
    prefixCaching: o.prefixCaching as boolean,
    kvBlocks: o.kvBlocks as number | undefined,
    loraModules: o.loraModules as string[] | undefined,
    maxLoras: o.maxLoras as number | undefined,
    loraLoadMs: o.loraLoadMs as number | undefined,
    gpuMemoryUtilization: o.gpuMemoryUtilization as number,
    slowdown: o.slowdown as number | undefined,
  });
}

/**
 * The flag each EngineSpec field comes from: for errors that the flags' combination makes, and
 * to give an engine process the spec the gateway plans with (`engineSpecArgs`).
 */
const FLAG_OF = {
  model: '--model',
  gpu: '--gpu',
  tp: '--tp',
  profile: '--profile',
  engineVersion: '--engine-version',
  maxModelLen: '--max-model-len',
  maxNumSeqs: '--max-num-seqs',
  maxBatchedTokens: '--max-num-batched-tokens',
  chunkedPrefill: '--enable-chunked-prefill',
  schedulerSteps: '--num-scheduler-steps',
  longPrefillTokenThreshold: '--long-prefill-token-threshold',
  maxIterationMs: '--max-iteration-ms',
  schedulingPolicy: '--scheduling-policy',
  ttftBoostMs: '--ttft-boost-ms',
  preemptionVictims: '--preemption-victims',
  decodeTokenBudget: '--decode-token-budget',
  toolKv: '--tool-kv',
  toolKeepMs: '--tool-keep-ms',
  preemption: '--preemption',
  prefixCaching: '--no-prefix-caching',
  kvBlocks: '--kv-blocks',
  loraModules: '--lora-modules',
  maxLoras: '--max-loras',
  loraLoadMs: '--lora-load-ms',
  gpuMemoryUtilization: '--gpu-memory-utilization',
  slowdown: '--slowdown',
} as const satisfies Partial<Record<keyof EngineSpec, string>>;

/**
 * The flags that give `goodput engine` the engine `spec` describes (what-if terms no flag
 * sets left out): `engineSpecFromFlags` of them is `spec`.
 */
export function engineSpecArgs(spec: EngineSpec): string[] {
  const args: string[] = [];
  for (const [field, flag] of Object.entries(FLAG_OF)) {
    const value = spec[field as keyof typeof FLAG_OF];
    if (value === undefined) continue;
    if (typeof value === 'boolean') {
      // A flag says on and its --no- form off; one that is only a --no- form (on by default)
      // is given when off.
      if (flag.startsWith('--no-')) args.push(...(value ? [] : [flag]));
      else args.push(value ? flag : flag.replace(/^--/, '--no-'));
    } else if (Array.isArray(value)) {
      for (const item of value as readonly string[]) args.push(flag, item);
    } else args.push(flag, String(value));
  }
  return args;
}

/**
 * The spec, once the engine it describes can be built: a value each flag accepts alone may not
 * go with the others (a context past the model's, a TTFT boost without priority scheduling, a
 * tp without a fitted profile). The error names the flag, where the engine names its field.
 */
function checked(spec: EngineSpec): EngineSpec {
  try {
    buildEngineConfig(spec);
    plannedProfile(spec);
  } catch (e) {
    if (!isConfigError(e) || e.file !== undefined) throw e;
    const flag =
      e.path === 'profile' && spec.profile === undefined
        ? '--model/--gpu/--tp'
        : (FLAG_OF as Partial<Record<string, string>>)[e.path];
    throw flag === undefined ? e : new ConfigError(flag, e.expected, e.got);
  }
  return spec;
}

/** vLLM's `--lora-modules NAME` or `NAME=PATH`, repeated: the names (the simulator loads no weights). */
function loraModules(value: string, previous: string[] | undefined): string[] {
  const name = value.split('=')[0];
  if (!/^[A-Za-z0-9_.:/-]{1,128}$/.test(name)) {
    throw new ConfigError(
      '--lora-modules',
      'NAME or NAME=PATH (NAME of letters, digits, _.:/-)',
      value,
    );
  }
  if (previous?.includes(name)) {
    throw new ConfigError('--lora-modules', 'each name once', name);
  }
  return [...(previous ?? []), name];
}
