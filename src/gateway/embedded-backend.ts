/**
 * A simulated engine inside the gateway's process — the embedded default fleet, so `goodput
 * serve` works on a fresh machine with nothing else. It speaks the backend contract like an HTTP
 * upstream would: the request body in, tokens out as the engine model emits them on the wall
 * clock, aborts freeing the request at once.
 */
import { stopStrings } from '../engine-server/stop-strings.ts';
import type { EngineConfig } from '../engine/engine-types.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Ms } from '../core/request/units.ts';
import type {
  GenerationRequest,
  RejectReason,
  SimulatedBackend,
} from '../engine-server/simulated-backend.ts';
import { rejectionError } from '../engine-server/rejections.ts';
import { followChoices, submitChoices } from '../engine-server/choices.ts';
import type { Generation } from '../engine-server/generation.ts';
import {
  chatPromptSize,
  choiceCount,
  completionPromptSize,
  fillerEcho,
  outputLimit,
  type ChatCompletionRequest,
  type CompletionRequest,
} from '../openai/index.ts';
import {
  UpstreamError,
  type Backend,
  type BackendLoad,
  type StreamEnd,
  type TokenSink,
  type UpstreamCall,
} from './backend.ts';
import type { ImageTokens } from '../openai/image-size.ts';

/** What routing may send an embedded engine: the adapters it loads; undefined: it loads none. */
export function servedAdapters(engine: {
  readonly loraModules?: readonly string[];
}): readonly string[] | undefined {
  const loaded = engine.loraModules;
  return loaded === undefined || loaded.length === 0 ? undefined : [...loaded];
}

export class EmbeddedBackend implements Backend {
  readonly name: string;
  private readonly engine: SimulatedBackend;
  private readonly clock: Clock;

  /** The adapters its engine loads, what routing may send it; undefined: it serves none. */
  private readonly servable: readonly string[] | undefined;
  /** The prompt tokens an image takes in its model (image-size.ts), if it takes any. */
  private readonly imageTokens: ImageTokens | undefined;

  constructor(name: string, engine: SimulatedBackend, clock: Clock, imageTokens?: ImageTokens) {
    this.name = name;
    this.engine = engine;
    this.clock = clock;
    this.servable = servedAdapters(engine.config);
    this.imageTokens = imageTokens;
  }

  load(): BackendLoad {
    const l = this.engine.load();
    return {
      ready: true,
      running: l.running,
      waiting: l.waiting,
      kvUsage: l.kvTotalBlocks > 0 ? l.kvUsedBlocks / l.kvTotalBlocks : 1,
      preemptions: this.engine.stats().preemptions,
      ...(l.loras === undefined ? {} : { loras: [...l.loras] }),
      ...(this.servable === undefined ? {} : { servable: this.servable }),
      atMs: this.clock.now() as Ms,
    };
  }

  async stream(call: UpstreamCall, onToken: TokenSink): Promise<StreamEnd> {
    const request = generationRequest(call, this.engine.config, this.imageTokens);
    const choices = choiceCount(call.body);
    const submitted = submitChoices(this.engine, request, choices);
    if (!submitted.ok) {
      const { status, body } = engineRefusal(
        submitted.reason,
        request,
        promptField(call),
        this.engine,
        choices,
      );
      throw new UpstreamError(`${this.name}: ${submitted.reason}`, status, true, body);
    }
    const gens = submitted.generations;
    const abort = () => {
      for (const gen of gens) gen.cancel();
    };
    call.signal.addEventListener('abort', abort, { once: true });
    try {
      const several = gens.length > 1;
      const end = await followChoices(gens, {
        token: (choice, text) => onToken(choice === 0 ? { text } : { text, choice }),
        finished: (choice, ev) => {
          if (several) onToken({ text: '', choice, finish: { reason: ev.reason } });
        },
      });
      if (end.end === 'finished') return choicesEnd(gens, end.finishes);
      if (end.end === 'crash') {
        throw new UpstreamError(
          `${this.name}: engine crashed mid-stream`,
          undefined,
          end.tokens === 0,
        );
      }
      throw call.signal.aborted
        ? call.signal.reason
        : new UpstreamError(`${this.name}: the engine closed`, undefined, end.tokens === 0);
    } finally {
      call.signal.removeEventListener('abort', abort);
      abort();
    }
  }

  async close(): Promise<void> {
    this.engine.close();
  }
}

/**
 * The end of a request's choices, each finished as `finishes` says: the prompt and its TTFT as
 * the first choice — which computed the prompt — had them, every choice's tokens.
 */
export function choicesEnd(
  gens: readonly Generation[],
  finishes: readonly { readonly reason: string; readonly completionTokens: number }[],
): StreamEnd {
  const first = gens[0];
  return {
    finishReason: finishes[0].reason,
    promptTokens: first.promptTokens,
    cachedTokens: first.cachedTokens,
    completionTokens: finishes.reduce((sum, f) => sum + f.completionTokens, 0),
    ttftParts: first.ttftParts(),
    ...(gens.length > 1 ? { choices: gens.length } : {}),
  };
}

/**
 * What an engine is asked, from the validated body the gateway hands every backend, an image
 * being `imageTokens` of its prompt.
 */
export function generationRequest(
  call: UpstreamCall,
  engine: Pick<EngineConfig, 'blockSize' | 'loraModules' | 'maxModelLen'>,
  imageTokens?: ImageTokens,
): GenerationRequest {
  const { promptTokens, prefix, maxTokens, ignoreEos, minTokens, stops, keepStop, echo } = describe(
    call,
    engine,
    imageTokens,
  );
  // A model naming one of the engine's LoRA adapters runs with it (vLLM's rule).
  const { model, priority } = call.body as { model?: unknown; priority?: unknown };
  const adapter =
    typeof model === 'string' && engine.loraModules?.includes(model) === true ? model : undefined;
  return {
    promptTokens,
    maxTokens,
    ignoreEos,
    minTokens,
    ...(stops.length === 0 ? {} : { stops, keepStop }),
    prefix,
    ...(adapter === undefined ? {} : { adapter }),
    // The class's band, which the gateway sets under priority scheduling.
    ...(typeof priority === 'number' ? { priority } : {}),
    ...(call.staged === undefined ? {} : { pieceTokens: call.staged.pieceTokens }),
    ...(echo === undefined ? {} : { echo }),
  };
}

/** The field of a call's body its prompt is in, as an engine's refusal names it. */
export function promptField(call: UpstreamCall): string {
  return call.kind === 'chat' ? 'messages' : 'prompt';
}

/**
 * An engine's refusal of `req`, as `goodput engine` answers it (engine-server/rejections.ts): its
 * status, and the OpenAI error naming the field and the numbers that decided it, which the
 * gateway passes to the client as a backend's own.
 */
export function engineRefusal(
  reason: RejectReason,
  req: GenerationRequest,
  field: string,
  engine: SimulatedBackend,
  choices = 1,
): { readonly status: number; readonly body: string } {
  const e = rejectionError(reason, {
    choices,
    promptField: field,
    promptTokens: req.promptTokens,
    limit: req.maxTokens === undefined ? undefined : { tokens: req.maxTokens, field: 'max_tokens' },
    maxModelLen: engine.maxModelLen,
    kvTokens: engine.load().kvTotalBlocks * engine.config.blockSize,
  });
  return { status: e.status, body: JSON.stringify(e.body()) };
}

/**
 * The validated body the gateway hands every backend (validated once, at the door), its prompt
 * sized as the gateway sized it and hashed in the engine's block size.
 */
function describe(
  call: UpstreamCall,
  engine: Pick<EngineConfig, 'blockSize' | 'maxModelLen'>,
  imageTokens: ImageTokens | undefined,
) {
  const req = call.body as ChatCompletionRequest | CompletionRequest;
  const size =
    call.kind === 'chat'
      ? chatPromptSize(req as ChatCompletionRequest, engine.maxModelLen, imageTokens)
      : completionPromptSize(req as CompletionRequest, engine.maxModelLen);
  return {
    promptTokens: size.tokens,
    prefix: size.hashes(size.tokens, engine.blockSize),
    maxTokens: outputLimit(req)?.tokens,
    ignoreEos: req.ignore_eos === true,
    minTokens: req.min_tokens ?? undefined,
    stops: stopStrings(req.stop),
    keepStop: req.include_stop_str_in_output === true,
    // Judged at the gateway's door (read-request.ts), which refuses what filler cannot echo.
    echo:
      call.kind === 'chat'
        ? undefined
        : fillerEcho(req as CompletionRequest, 'the simulated fleet'),
  };
}
