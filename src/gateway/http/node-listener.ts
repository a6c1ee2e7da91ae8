/**
 * The gateway's Node request listener: the two completion endpoints are handled on Node's own
 * request and response — no web Request, Headers, AbortController or Response on the path every
 * request takes, so a refusal under overload costs little more than Node's HTTP itself — and
 * every other route goes to the Hono app through @hono/node-server. A completion's whole answer
 * is written as one head and one body; a stream was already written by the handler.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import { serverError } from '../../openai/index.ts';
import type { OpsLog } from '../ops-log.ts';
import { errorWhole, isWhole, writeWhole } from './answer.ts';
import type { GatewayEnv } from './app.ts';
import { COMPLETION_PATHS, handleCompletion, type CompletionsDeps } from './completions.ts';
import { nodeInbound } from './inbound.ts';

export function nodeListener(
  app: Hono<GatewayEnv>,
  deps: CompletionsDeps & { readonly log: OpsLog },
): (req: IncomingMessage, res: ServerResponse) => void {
  const rest = getRequestListener(app.fetch);
  return (req, res) => {
    const kind = req.method === 'POST' ? COMPLETION_PATHS[req.url ?? ''] : undefined;
    if (kind === undefined) {
      void rest(req, res);
      return;
    }
    handleCompletion(kind, nodeInbound(req, res), deps, res).then(
      (answer) => {
        if (isWhole(answer)) writeWhole(res, answer);
      },
      (e: unknown) => {
        // A bug: logged under an id the answer carries, so the two can be matched.
        const id = deps.newId();
        deps.log.error({ err: e, request_id: id }, 'unexpected error');
        writeWhole(res, errorWhole(serverError('internal error'), { 'x-goodput-request-id': id }));
      },
    );
  };
}
