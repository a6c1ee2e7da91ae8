/**
 * The embedded fleet's backends as they answer a request that must call a tool (`tool_choice`
 * `required`, or a named function): each filler token becomes a piece of one call, and the finish
 * closes it (openai/filler-tool-call.ts), as `goodput engine` answers over HTTP. Every other
 * request passes as it is.
 */
import { FillerToolCall, requiredToolName, type ChatCompletionRequest } from '../openai/index.ts';
import type { Backend } from './backend.ts';

export function callingTools(backend: Backend): Backend {
  return {
    name: backend.name,
    ...(backend.server === undefined ? {} : { server: backend.server }),
    load: () => backend.load(),
    close: () => backend.close(),
    async stream(call, onToken) {
      const name =
        call.kind === 'chat' ? requiredToolName(call.body as ChatCompletionRequest) : undefined;
      if (name === undefined) return backend.stream(call, onToken);
      const filler = new FillerToolCall(`chatcmpl-tool-${call.id}`, name);
      const end = await backend.stream(call, (t, sent) =>
        onToken({ text: '', toolCalls: filler.piece(t.text) }, sent),
      );
      const closing = filler.finish(end.finishReason);
      return {
        ...end,
        finishReason: FillerToolCall.finishReason(end.finishReason),
        ...(closing === undefined ? {} : { finishToolCalls: closing }),
      };
    },
  };
}
