/**
 * The status port (`--status-port`): a second listener that answers the probes and the scrape —
 * `/healthz`, `/readyz`, `/health`, `/metrics` — and nothing else, outside the line that new
 * connections wait in on the API port (connection-intake.ts). In a burst of thousands of
 * connections a probe's new connection to the API port waits its turn there, about a second on
 * a 2-core VM: as long as a Kubernetes probe's default timeout, so a gateway doing its job under
 * a burst could be restarted for it. Here a probe is read as soon as Node accepts it. Each answer
 * is the app's own (a draining gateway's `/readyz` is 503 on both ports); another path is a 404
 * naming what the port serves, counted and recorded as any refusal.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { Hono } from 'hono';
import { OpenAiError } from '../../openai/index.ts';
import type { OpsLog } from '../ops-log.ts';
import type { GatewayEnv } from './app.ts';
import { listenRefused } from './listeners.ts';
import type { RefuseUnparsed } from './unparsed.ts';
import { idHeaders } from './answer.ts';

export const STATUS_PATHS: readonly string[] = ['/healthz', '/readyz', '/health', '/metrics'];

/** The status listener, listening on `host:port`; a port that cannot be taken names the flag. */
export async function listenStatus(
  app: Hono<GatewayEnv>,
  host: string,
  port: number,
  deps: { readonly log: OpsLog; readonly refuse: RefuseUnparsed },
): Promise<Server> {
  const answer = getRequestListener(app.fetch, { hostname: 'localhost' });
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query < 0 ? url : url.slice(0, query);
    if (STATUS_PATHS.includes(path)) {
      void answer(req, res);
      return;
    }
    const e = new OpenAiError(
      404,
      `${req.method} ${path}: not served on the status port (it serves ${STATUS_PATHS.join(', ')})`,
      null,
      'not_found',
    );
    const id = deps.refuse(e.status, 'not_found');
    req.resume();
    res.writeHead(e.status, {
      'content-type': 'application/json',
      ...idHeaders(id),
      'x-goodput-reason': 'not_found',
    });
    res.end(JSON.stringify(e.body()));
  });
  return new Promise<Server>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(listenRefused(e, host, port, '--status-port')),
    );
    server.listen({ port, host }, () => {
      server.removeAllListeners('error');
      server.on('error', (e: NodeJS.ErrnoException) =>
        deps.log.error({ err: e, code: e.code }, `status port error: ${e.message}`),
      );
      resolve(server);
    });
  });
}

/** The port a listening server took. */
export const portOf = (server: Server): number => (server.address() as AddressInfo).port;
