/**
 * `POST /v1/chat/completions`, `POST /v1/completions` and `POST /v1/responses` (the chat it is,
 * answered as the Responses API's items: openai/responses-request.ts, response-events.ts):
 * validate, estimate the prompt, submit to the backend, then stream tokens as SSE or answer once
 * the generation finishes. Main rule:
 * the client's connection owns the request — when it closes, the generation is cancelled and
 * its KV freed, whether it was queued, running or streaming.
 */
import type { Context } from 'hono';
import type { HttpBindings } from '@hono/node-server';
import { parseChatCompletionRequest, type ChatCompletionRequest } from '../openai/chat-request.ts';
import { ResponseBuilder } from '../openai/response-events.ts';
import {
  asChatRequest,
  parseResponsesRequest,
  fillerAnswerableResponse,
  statelessOnly,
  type ResponsesRequest,
} from '../openai/responses-request.ts';
import type { ChunkHead } from '../openai/chunks.ts';
import { fillerEcho, parseCompletionRequest, promptList } from '../openai/completion-request.ts';
import { OpenAiError, invalidRequest, modelNotFound, serverError } from '../openai/errors.ts';
import type { PromptBlockHashes } from '../openai/prefix-hashes.ts';
import { chatPromptSize, completionPromptSize } from '../openai/prompt-size.ts';
import { FillerToolCall, requiredToolName } from '../openai/filler-tool-call.ts';
import { imagesSizable } from '../openai/image-parts.ts';
import { conversationItems } from '../openai/response-items.ts';
import { truncationStart } from '../openai/truncation.ts';
import {
  choiceCount,
  includeUsage,
  continuousUsage,
  outputLimit,
  fillerAnswerable,
  priorityAllowed,
  withServedModel,
} from '../openai/request-fields.ts';
import {
  answerId,
  chatChoice,
  chatCompletionOf,
  textChoice,
  textCompletionOf,
  usage,
  type FinishReason,
} from '../openai/responses.ts';
import { decodeUtf8 } from '../openai/utf8-text.ts';
import { checkIdentityEncoding, checkJsonContentType } from '../openai/errors.ts';
import { parseJsonText } from '../openai/validation.ts';
import type { Generation } from './generation.ts';
import { rejectionError } from './rejections.ts';
import type { SimulatedBackend } from './simulated-backend.ts';
import { type CompletionKind, replyEnd, replyPiece, sseResponse } from './sse-body.ts';
import { followChoices, submitChoices } from './choices.ts';
import type { ImageTokens } from '../openai/image-size.ts';
import { stopStrings } from './stop-strings.ts';

/** Who refuses what it cannot answer, as its refusals say. */
const ENGINE = 'the simulated engine';

export interface RouteDeps {
  readonly backend: SimulatedBackend;
  readonly servedModelName: string;
  /**
   * The request's id, which its answer's carries (`chatcmpl-…`, `cmpl-…`, `resp_…`): the
   * caller's `X-Request-Id` when it sent one (as vLLM does), else fresh.
   */
  nextId(requestId: string | undefined): string;
  /** Unix seconds, for `created`. */
  unixSeconds(): number;
  /** The prompt tokens an image takes in its model (image-size.ts); absent: refused by name. */
  readonly imageTokens?: ImageTokens;
}

interface Prepared {
  readonly model: string;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly continuousUsage: boolean;
  readonly ignoreEos: boolean;
  readonly minTokens: number | undefined;
  /** vLLM's stop strings, and `include_stop_str_in_output`. */
  readonly stops: readonly string[];
  readonly keepStop: boolean;
  readonly priority: number | undefined;
  readonly limit: ReturnType<typeof outputLimit>;
  /** Choices to sample (`n`). */
  readonly choices: number;
  readonly promptField: string;
  /** The prompt's block hashes, in the engine's block size. */
  readonly prefix: (blockTokens: number) => PromptBlockHashes;
  readonly promptTokens: number;
  /** The prompt came as token ids: its size is exact, not estimated. */
  readonly promptTokensExact: boolean;
  /** The function a chat's reply must call, if one is required. */
  readonly toolName?: string;
  /** The Responses request the chat was made from: its answer is the Responses API's. */
  readonly responses?: ResponsesRequest;
  /** A text completion's `echo`: the prompt its reply starts with. */
  readonly echo?: string;
  /** vLLM's `request_id`: what names the request where no X-Request-Id header does. */
  readonly requestId?: string;
}

/**
 * The body as JSON; bytes that are not UTF-8 are refused, not replaced (see utf8-text.ts), and a
 * compressed body, or one not declared JSON, is a 415.
 */
async function jsonBody(c: Context): Promise<unknown> {
  checkIdentityEncoding(c.req.header('content-encoding'));
  checkJsonContentType(c.req.header('content-type'));
  return parseJsonText(decodeUtf8(new Uint8Array(await c.req.arrayBuffer())));
}

export async function chatRoute(c: Context, deps: RouteDeps): Promise<Response> {
  const req = parseChatCompletionRequest(withServedModel(await jsonBody(c), deps.servedModelName));
  imagesSizable(req.messages, deps.imageTokens, 'messages', ENGINE);
  return runChat(c, deps, req);
}

export async function responsesRoute(c: Context, deps: RouteDeps): Promise<Response> {
  const responses = parseResponsesRequest(withServedModel(await jsonBody(c), deps.servedModelName));
  imagesSizable(responses.input, deps.imageTokens, 'input', ENGINE);
  fillerAnswerableResponse(responses, 'the simulated engine');
  statelessOnly(responses, 'the simulated engine');
  // `truncation: "auto"`: the conversation from the earliest turn that fits, by this engine's
  // own count of a prompt.
  const context = deps.backend.maxModelLen;
  const items = conversationItems(responses.input, '');
  const from = truncationStart(
    responses,
    items,
    context,
    (chat) => chatPromptSize(chat, context, deps.imageTokens).tokens,
  );
  const held = from === 0 ? responses : { ...responses, input: items.slice(from) };
  return runChat(c, deps, asChatRequest(held), held);
}

function runChat(
  c: Context,
  deps: RouteDeps,
  req: ChatCompletionRequest,
  responses?: ResponsesRequest,
): Promise<Response> {
  fillerAnswerable(req, 'the simulated engine');
  const size = chatPromptSize(req, deps.backend.maxModelLen, deps.imageTokens);
  return run(c, deps, responses === undefined ? 'chat' : 'responses', {
    model: req.model,
    stream: req.stream === true,
    includeUsage: includeUsage(req),
    continuousUsage: continuousUsage(req),
    ignoreEos: req.ignore_eos === true,
    minTokens: req.min_tokens ?? undefined,
    stops: stopStrings(req.stop),
    keepStop: req.include_stop_str_in_output === true,
    priority: req.priority ?? undefined,
    limit: outputLimit(req),
    choices: choiceCount(req),
    promptField: 'messages',
    requestId: req.request_id ?? undefined,
    prefix: (blockTokens) => size.hashes(size.tokens, blockTokens),
    promptTokens: size.tokens,
    promptTokensExact: false,
    toolName: requiredToolName(req),
    responses,
  });
}

export async function completionRoute(c: Context, deps: RouteDeps): Promise<Response> {
  const req = parseCompletionRequest(withServedModel(await jsonBody(c), deps.servedModelName));
  fillerAnswerable(req, 'the simulated engine');
  const prompts = promptList(req);
  if (prompts.length !== 1) {
    throw invalidRequest(
      `prompt: expected one prompt (the simulated engine does not batch prompts), got ${prompts.length} prompts`,
      'prompt',
    );
  }
  const echo = fillerEcho(req, ENGINE);
  const size = completionPromptSize(req, deps.backend.maxModelLen);
  return run(c, deps, 'text', {
    model: req.model,
    stream: req.stream === true,
    includeUsage: includeUsage(req),
    continuousUsage: continuousUsage(req),
    ignoreEos: req.ignore_eos === true,
    minTokens: req.min_tokens ?? undefined,
    stops: stopStrings(req.stop),
    keepStop: req.include_stop_str_in_output === true,
    priority: req.priority ?? undefined,
    limit: outputLimit(req),
    choices: choiceCount(req),
    promptField: 'prompt',
    requestId: req.request_id ?? undefined,
    prefix: (blockTokens) => size.hashes(size.tokens, blockTokens),
    promptTokens: size.tokens,
    promptTokensExact: typeof prompts[0] !== 'string',
    echo,
  });
}

async function run(c: Context, deps: RouteDeps, kind: CompletionKind, p: Prepared) {
  const { backend } = deps;
  // The model asked for is the base model or one of the LoRA adapters served (vLLM's rule).
  const adapters = backend.config.loraModules ?? [];
  const adapter = adapters.includes(p.model) ? p.model : undefined;
  if (p.model !== deps.servedModelName && adapter === undefined) {
    throw modelNotFound(p.model, [deps.servedModelName, ...adapters]);
  }
  const byPriority = backend.config.schedulingPolicy === 'priority';
  priorityAllowed(p, byPriority, 'this engine schedules first come, first served');
  const blockSize = backend.config.blockSize;
  const result = submitChoices(
    backend,
    {
      promptTokens: p.promptTokens,
      maxTokens: p.limit?.tokens,
      ignoreEos: p.ignoreEos,
      minTokens: p.minTokens,
      stops: p.stops,
      keepStop: p.keepStop,
      prefix: p.prefix(blockSize),
      adapter,
      priority: p.priority,
      ...(p.echo === undefined ? {} : { echo: p.echo }),
    },
    p.choices,
  );
  if (!result.ok) {
    const load = backend.load();
    throw rejectionError(result.reason, {
      promptField: p.promptField,
      promptTokens: p.promptTokens,
      promptTokensExact: p.promptTokensExact,
      limit: p.limit,
      maxModelLen: backend.maxModelLen,
      kvTokens: load.kvTotalBlocks * blockSize,
      choices: p.choices,
    });
  }
  const gens = result.generations;
  const cancel = () => {
    for (const gen of gens) gen.cancel();
  };
  const signal = c.req.raw.signal;
  if (signal.aborted) cancel();
  else signal.addEventListener('abort', cancel, { once: true });

  const requestId = deps.nextId(c.req.header('x-request-id') ?? p.requestId);
  const head: ChunkHead = {
    id: answerId(kind === 'text' ? 'completion' : kind, requestId),
    created: deps.unixSeconds(),
    model: adapter ?? deps.servedModelName,
    includeUsage: p.includeUsage,
    continuousUsage: p.continuousUsage,
  };
  // Served by Node, the request's socket and response; in-process (`app.request`), neither.
  const node = c.env as Partial<HttpBindings> | undefined;
  const toolName = p.toolName;
  const calls =
    toolName === undefined
      ? undefined
      : gens.map((_, i) => FillerToolCall.of(requestId, i, toolName));
  const asked = p.responses;
  const builder =
    asked === undefined
      ? undefined
      : new ResponseBuilder(
          { id: requestId, createdAt: head.created, model: head.model, request: asked },
          p.stream,
        );
  const socket = node?.incoming?.socket;
  if (p.stream) {
    // Tokens already written reach the client, then the connection drops mid-body.
    const cut = () => (socket === undefined ? false : (socket.destroySoon(), true));
    return sseResponse(kind, gens, head, node?.outgoing, cut, calls, builder);
  }
  return c.json(await collect(kind, gens, head, () => socket?.destroy(), calls, builder));
}

/**
 * Waits for every choice's whole generation; the body OpenAI returns when `stream` is off. Its
 * usage: the prompt once, every choice's tokens.
 */
async function collect(
  kind: CompletionKind,
  gens: readonly Generation[],
  head: ChunkHead,
  cut: () => void,
  calls: readonly FillerToolCall[] | undefined,
  builder: ResponseBuilder | undefined,
): Promise<object> {
  const texts = gens.map(() => '');
  const end = await followChoices(gens, {
    token: (choice, text) => {
      const call = calls?.[choice];
      if (builder !== undefined) builder.add(replyPiece(text, call));
      else if (call === undefined) texts[choice] += text;
      else call.piece(text);
    },
  });
  if (end.end !== 'finished') {
    if (end.end === 'crash') {
      cut();
      throw serverError(`generation ${head.id}: injected crash`, 'injected_crash');
    }
    // Cancelled (the client left: nobody reads this) or the backend shut down.
    throw new OpenAiError(
      503,
      `generation ${head.id} ended before it finished`,
      null,
      'shutting_down',
    );
  }
  const ends = end.finishes;
  if (builder !== undefined) return builder.finish(replyEnd(gens[0], ends[0], calls?.[0])).response;
  const completion = ends.reduce((sum, e) => sum + e.completionTokens, 0);
  const used = usage(gens[0].promptTokens, completion, gens[0].cachedTokens);
  if (kind === 'text')
    return textCompletionOf(
      head,
      texts.map((t, i) => textChoice(i, t, ends[i].reason)),
      used,
    );
  return chatCompletionOf(
    head,
    texts.map((t, i) => wholeChatChoice(i, t, ends[i], calls?.[i])),
    used,
  );
}

/** A chat choice once generated: its text, or the call it was required to make. */
function wholeChatChoice(
  index: number,
  text: string,
  end: { readonly reason: FinishReason },
  call: FillerToolCall | undefined,
) {
  if (call === undefined) return chatChoice(index, text, end.reason);
  call.finish(end.reason);
  return chatChoice(index, '', FillerToolCall.finishReason(end.reason), {
    toolCalls: [call.whole()],
  });
}
