/**
 * A filler reply held to a tool call: a simulated engine asked to call a tool (`tool_choice`
 * `required`, or a named function) answers with one call whose arguments are its words,
 * `{"input": "<words>"}`, streamed as vLLM's tool parsers stream a call — the first piece names
 * it, each next one adds to its arguments, and the finish, at a stop, closes them and ends the
 * reply as `tool_calls`. Cut at the output limit, the arguments stay open, as a model's do, and
 * the reply ends as `length`. So agents' traffic runs end to end against the simulated fleet:
 * the call is relayed, counted and gathered as a real server's is.
 */
import type { ToolCallDelta } from './chunks.ts';
import type { ChatCompletionRequest } from './chat-request.ts';
import type { ToolCall } from './tool-fields.ts';

/** The function a request must call: the named one, or under `required` the first offered. */
export function requiredToolName(
  req: Pick<ChatCompletionRequest, 'tools' | 'tool_choice'>,
): string | undefined {
  const choice = req.tool_choice;
  if (choice === 'required') return req.tools?.[0]?.function.name;
  return typeof choice === 'object' && choice !== null ? choice.function.name : undefined;
}

const OPEN = '{"input": "';
const CLOSE = '"}';

export class FillerToolCall {
  readonly #id: string;
  readonly #name: string;
  #arguments = '';

  /** `id`: the call's (vLLM's are `chatcmpl-tool-…`). */
  constructor(id: string, name: string) {
    this.#id = id;
    this.#name = name;
  }

  /** The call of request `requestId`'s choice `choice`, named after both (the first: the request). */
  static of(requestId: string, choice: number, name: string): FillerToolCall {
    return new FillerToolCall(`chatcmpl-tool-${requestId}${choice > 0 ? `-${choice}` : ''}`, name);
  }

  /** The pieces a token of filler text streams as: the first names the call and opens it. */
  piece(text: string): ToolCallDelta[] {
    const words = JSON.stringify(text).slice(1, -1);
    if (this.#arguments === '') {
      this.#arguments = OPEN + words;
      const named = { name: this.#name, arguments: OPEN + words };
      return [{ index: 0, id: this.#id, type: 'function', function: named }];
    }
    this.#arguments += words;
    return [{ index: 0, function: { arguments: words } }];
  }

  /** What the finish carries: at a stop, the arguments' close; cut short, nothing. */
  finish(reason: string): ToolCallDelta[] | undefined {
    if (reason !== 'stop') return undefined;
    if (this.#arguments === '') return this.piece('').concat(this.finish('stop') ?? []);
    this.#arguments += CLOSE;
    return [{ index: 0, function: { arguments: CLOSE } }];
  }

  /** The reply's finish reason: a stop is the call's end. */
  static finishReason<R extends string>(reason: R): R | 'tool_calls' {
    return reason === 'stop' ? 'tool_calls' : reason;
  }

  /** The call as a whole answer carries it, once the reply has ended. */
  whole(): ToolCall {
    return {
      id: this.#id,
      type: 'function',
      function: { name: this.#name, arguments: this.#arguments },
    };
  }
}
