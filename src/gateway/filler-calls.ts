/**
 * The embedded fleet's backends as they answer a request that must call a tool (`tool_choice`
 * `required`, or a named function): each filler token becomes a piece of one call — one per
 * choice — and the finish closes it (openai/filler-tool-call.ts), as `goodput engine` answers over
 * HTTP. Every other request passes as it is.
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
      // A call for each choice, named as `goodput engine` names them.
      const fillers: FillerToolCall[] = [];
      const filler = (c: number) => (fillers[c] ??= FillerToolCall.of(call.id, c, name));
      const end = await backend.stream(call, (t, sent) => {
        const choice = t.choice ?? 0;
        const tag = choice === 0 ? {} : { choice };
        if (t.finish === undefined)
          return onToken({ text: '', toolCalls: filler(choice).piece(t.text), ...tag }, sent);
        const reason = FillerToolCall.finishReason(t.finish.reason);
        const toolCalls = filler(choice).finish(t.finish.reason);
        onToken({ text: '', ...tag, finish: toolCalls ? { reason, toolCalls } : { reason } }, sent);
      });
      const closing = end.choices === undefined ? filler(0).finish(end.finishReason) : undefined;
      return {
        ...end,
        finishReason: FillerToolCall.finishReason(end.finishReason),
        ...(closing === undefined ? {} : { finishToolCalls: closing }),
      };
    },
  };
}
