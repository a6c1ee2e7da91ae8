/**
 * A Responses API answer (`object: "response"`), whole or as its stream of events, built from a
 * reply's tokens as chat streams them: its thinking becomes a `reasoning` item, its text a
 * `message` item with one `output_text` part, each tool call a `function_call` item, in the order
 * they came. Main rules, OpenAI's: every event carries its `type` and a `sequence_number`
 * counting from 0, and goes as an SSE `event:` of that type; an item is announced
 * (`response.output_item.added`), grows by deltas and is closed (`response.output_item.done`)
 * before the next one opens; the stream opens with `response.created` and `response.in_progress`
 * and ends with `response.completed`, `response.incomplete` (cut at `max_output_tokens`) or
 * `response.failed`, each with the response as it then stands. No `[DONE]` follows.
 */
import type { ToolCallDelta } from './chunks.ts';
import type { ResponsesRequest } from './responses-request.ts';
import { answerId } from './responses.ts';
import { servedTier } from './request-fields.ts';

/** A reply's piece: one token's worth of thinking, text or tool-call pieces. */
export interface ReplyPiece {
  readonly text: string;
  readonly reasoning?: { readonly text: string };
  readonly toolCalls?: readonly ToolCallDelta[];
  /**
   * Its text's log probabilities, as chat gives them (`{content: [{token, logprob, bytes,
   * top_logprobs}]}`): the Responses API's entries are the same.
   */
  readonly logprobs?: object;
}

/** How a reply ended, in chat's terms. */
export interface ReplyEnd {
  readonly finishReason: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** The prompt's tokens served from the prefix cache, when the server knows them. */
  readonly cachedTokens?: number;
  /** Pieces of tool calls the finish carries. */
  readonly finishToolCalls?: readonly ToolCallDelta[];
}

export interface ResponsesHead {
  /** The request's id: the response is `resp_<id>`, its items `msg_<id>_<n>`, … */
  readonly id: string;
  /** Unix seconds. */
  readonly createdAt: number;
  readonly model: string;
  readonly request: ResponsesRequest;
}

type TextItem = Extract<Item, { text: string }>;

type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

/** An item of the output; `position`: its place there (its `output_index`). */
type Item = { id: string; position: number; status: ItemStatus } & (
  | { type: 'reasoning'; text: string }
  | { type: 'message'; text: string; logprobs: unknown[] }
  | { type: 'function_call'; index: number; callId: string; name: string; args: string }
);

/**
 * Builds one response from its reply's pieces. Streaming, each call returns the SSE events it
 * adds; whole, it returns '' and only `response()` matters.
 */
/** OpenAI's statuses of a response. */
export type ResponseStatus =
  'queued' | 'in_progress' | 'completed' | 'incomplete' | 'failed' | 'cancelled';

export class ResponseBuilder {
  private readonly head: ResponsesHead;
  private readonly streaming: boolean;
  private readonly items: Item[] = [];
  /** The item that grows now: the last one, until it is closed. */
  private open: Item | undefined;
  private seq = 0;
  private reasoningTokens = 0;
  /** The final response, once `finish` or `fail` has made it. */
  private final: object | undefined;

  constructor(head: ResponsesHead, streaming: boolean) {
    this.head = head;
    this.streaming = streaming;
  }

  /**
   * The stream's first events: the response created, and in progress — or queued, a background
   * response waiting its turn (`started` follows when it begins).
   */
  opening(status: 'queued' | 'in_progress' = 'in_progress'): string {
    const response = this.response(status);
    return (
      this.event('response.created', { response }) +
      this.event(status === 'queued' ? 'response.queued' : 'response.in_progress', { response })
    );
  }

  /**
   * The stream goes on from events told before this builder (a background response handed from
   * a replica that drained to another): its next event is numbered `next`.
   */
  resumeAt(next: number): void {
    this.seq = next;
  }

  /** A queued background response begins. */
  started(): string {
    return this.event('response.in_progress', { response: this.response('in_progress') });
  }

  /** The events one piece of the reply adds. */
  add(p: ReplyPiece): string {
    let out = '';
    if (p.reasoning !== undefined && p.reasoning.text !== '') {
      this.reasoningTokens++;
      out += this.grow('reasoning', p.reasoning.text);
    }
    if (p.text !== '') out += this.grow('message', p.text, scored(p.logprobs));
    if (p.toolCalls !== undefined) for (const c of p.toolCalls) out += this.call(c);
    return out;
  }

  /**
   * The last item closed and the response's end: completed, or incomplete when the reply was cut
   * at its output limit. `extra` goes on the final response (the gateway's mark of degradation).
   */
  finish(
    end: ReplyEnd,
    extra: object = {},
  ): { readonly events: string; readonly response: object } {
    let events = '';
    for (const c of end.finishToolCalls ?? []) events += this.call(c);
    const cut = end.finishReason === 'length';
    events += this.close(cut ? 'incomplete' : 'completed');
    const response = { ...this.response(cut ? 'incomplete' : 'completed', end), ...extra };
    events += this.event(cut ? 'response.incomplete' : 'response.completed', { response });
    this.final = response;
    return { events, response };
  }

  /** The stream's end when the reply failed midway: what it had, and why it failed. */
  fail(code: string, message: string): string {
    const response = { ...this.response('failed'), error: { code, message } };
    this.final = response;
    return this.event('response.failed', { response });
  }

  /** A background response before its reply: queued, or in progress. */
  pending(status: 'queued' | 'in_progress'): object {
    return this.response(status);
  }

  /** A background response that ended without its reply: cancelled, or failed with `error`. */
  unanswered(status: 'cancelled' | 'failed', error: { code: string; message: string } | null) {
    return { ...this.response(status), error };
  }

  /** The response as it ended (completed, incomplete or failed); undefined until it has. */
  get ended(): object | undefined {
    return this.final;
  }

  /** The response as it stands: `usage` once the reply has ended. */
  private response(status: ResponseStatus, end?: ReplyEnd) {
    const r = this.head.request;
    return {
      id: answerId('responses', this.head.id),
      object: 'response' as const,
      created_at: this.head.createdAt,
      status,
      background: r.background === true,
      error: null,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      instructions: r.instructions ?? null,
      max_output_tokens: r.max_output_tokens ?? null,
      max_tool_calls: null,
      model: this.head.model,
      output: this.items.map((it) => this.item(it)),
      parallel_tool_calls: r.parallel_tool_calls ?? true,
      previous_response_id: r.previous_response_id ?? null,
      reasoning: { effort: r.reasoning?.effort ?? null, summary: r.reasoning?.summary ?? null },
      service_tier: servedTier(r.service_tier ?? 'auto'),
      temperature: r.temperature ?? null,
      text: { format: r.text?.format ?? { type: 'text' } },
      tool_choice: r.tool_choice ?? 'auto',
      tools: r.tools ?? [],
      top_p: r.top_p ?? null,
      truncation: r.truncation ?? 'disabled',
      usage:
        end === undefined
          ? null
          : {
              input_tokens: end.promptTokens,
              input_tokens_details: { cached_tokens: end.cachedTokens ?? 0 },
              output_tokens: end.completionTokens,
              output_tokens_details: { reasoning_tokens: this.reasoningTokens },
              total_tokens: end.promptTokens + end.completionTokens,
            },
      user: r.user ?? null,
      metadata: r.metadata ?? {},
    };
  }

  /** Text of thinking or reply added to the open item of its type, opened when it is not. */
  private grow(type: 'reasoning' | 'message', delta: string, logprobs: unknown[] = []): string {
    let out = '';
    let it = this.open as TextItem | undefined;
    if (it === undefined || it.type !== type) {
      out += this.close('completed');
      const id = `${type === 'message' ? 'msg' : 'rs'}_${this.head.id}`;
      const opened = { type, id, position: 0, status: 'in_progress', text: '', logprobs: [] };
      it = this.start(opened as TextItem);
      out += this.added(it);
      out += this.event('response.content_part.added', { ...this.at(it), part: this.part(it) });
    }
    it.text += delta;
    if (it.type === 'message') {
      for (const l of logprobs) it.logprobs.push(l);
      out += this.event('response.output_text.delta', { ...this.at(it), delta, logprobs });
    } else out += this.event('response.reasoning_text.delta', { ...this.at(it), delta });
    return out;
  }

  /** A piece of a tool call: a new call opens its item, the rest add to its arguments. */
  private call(c: ToolCallDelta): string {
    let out = '';
    let it = this.items.find((i) => i.type === 'function_call' && i.index === c.index);
    if (it === undefined) {
      out += this.close('completed');
      const n = this.items.length;
      it = this.start({
        type: 'function_call',
        id: `fc_${this.head.id}`,
        position: 0,
        status: 'in_progress',
        index: c.index,
        callId: c.id || `call_${this.head.id}_${n}`,
        name: c.function?.name ?? '',
        args: '',
      });
      out += this.added(it);
    }
    const delta = c.function?.arguments;
    if (it.type !== 'function_call' || !delta) return out;
    it.args += delta;
    const at = { item_id: it.id, output_index: it.position };
    return out + this.event('response.function_call_arguments.delta', { ...at, delta });
  }

  private start<I extends Item>(it: I): I {
    // Items of one type are told apart by their place in the output.
    it.position = this.items.length;
    it.id += `_${it.position}`;
    this.items.push(it);
    this.open = it;
    return it;
  }

  private added(it: Item): string {
    const item = this.item(it, true);
    return this.event('response.output_item.added', { output_index: it.position, item });
  }

  /** The open item's closing events, with the status it ends in. */
  private close(status: ItemStatus): string {
    const it = this.open;
    if (it === undefined) return '';
    this.open = undefined;
    it.status = status;
    const output_index = it.position;
    let out = '';
    if (it.type === 'function_call') {
      const at = { item_id: it.id, output_index };
      out += this.event('response.function_call_arguments.done', { ...at, arguments: it.args });
    } else {
      const done =
        it.type === 'message' ? 'response.output_text.done' : 'response.reasoning_text.done';
      const logprobs = it.type === 'message' ? { logprobs: it.logprobs } : {};
      out += this.event(done, { ...this.at(it), text: it.text, ...logprobs });
      out += this.event('response.content_part.done', { ...this.at(it), part: this.part(it) });
    }
    const item = this.item(it);
    return out + this.event('response.output_item.done', { output_index, item });
  }

  private at(it: Item) {
    return { item_id: it.id, output_index: it.position, content_index: 0 };
  }

  private part(it: Item & { text: string }) {
    return it.type === 'message'
      ? { type: 'output_text', text: it.text, annotations: [], logprobs: it.logprobs }
      : { type: 'reasoning_text', text: it.text };
  }

  /** An item as the output lists it; `empty`: as announced, before any of its content. */
  private item(it: Item, empty = false) {
    const s = it.status;
    switch (it.type) {
      case 'message':
        return {
          id: it.id,
          type: 'message',
          status: s,
          role: 'assistant',
          content: empty ? [] : [this.part(it)],
        };
      case 'reasoning':
        return { id: it.id, type: 'reasoning', summary: [], content: empty ? [] : [this.part(it)] };
      case 'function_call':
        return {
          id: it.id,
          type: 'function_call',
          status: s,
          call_id: it.callId,
          name: it.name,
          arguments: empty ? '' : it.args,
        };
    }
  }

  private event(type: string, fields: object): string {
    const sequence_number = this.seq++;
    if (!this.streaming) return '';
    const data = JSON.stringify({ type, sequence_number, ...fields });
    return `event: ${type}\ndata: ${data}\n\n`;
  }
}

/** A token's log probability entries, from chat's object (none: an empty list). */
function scored(logprobs: object | undefined): unknown[] {
  const content = (logprobs as { content?: unknown } | undefined)?.content;
  return Array.isArray(content) ? content : [];
}
