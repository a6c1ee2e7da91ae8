/**
 * The answers of `POST /v1/responses`, built from the chat stream it is served over
 * (openai/response-events.ts): streamed as the Responses API's events, or whole as its response
 * object. Cut after tokens went out, the stream ends with `response.failed`, its error naming
 * what cut it, as a chat stream's error event does.
 */
import type { ResponseBuilder } from '../../openai/index.ts';
import { wallClock } from '../../runtime/wall-clock.ts';
import type { StreamEnd } from '../backend.ts';
import { cutShort, degradedMark, type StreamForm } from './answers.ts';
import type { TokenRelay } from './token-relay.ts';

export function responsesForm(
  builder: ResponseBuilder,
  degradeLevel: number | undefined,
): StreamForm {
  return {
    opening: () => builder.opening(),
    token: (t) => builder.add(t),
    closing: (end) => builder.finish(end, degradedMark(degradeLevel)).events,
    failure: (e) => {
      const { code, message } = cutShort(e);
      return builder.fail(code, message);
    },
  };
}

/**
 * The whole response, once the reply has ended. Nothing is written before the end; a builder
 * that streams tells its events to `events` as it makes them (a background response's stream).
 */
export async function wholeResponses(
  builder: ResponseBuilder,
  relay: TokenRelay,
  done: Promise<StreamEnd>,
  degradeLevel: number | undefined,
  events: (sse: string) => void = () => {},
): Promise<object> {
  // A token is "sent" as it is collected.
  relay.drainTo((t, sent) => {
    events(builder.add(t));
    sent?.(wallClock.now());
  });
  const { events: last, response } = builder.finish(await done, degradedMark(degradeLevel));
  events(last);
  return response;
}
