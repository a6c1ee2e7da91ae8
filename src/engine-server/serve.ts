/**
 * Puts an engine server on a Node HTTP socket (`@hono/node-server`) and resolves once it is
 * listening, with the port it got (pass port 0 for an ephemeral one). Main rule: `close()`
 * releases everything it opened — the engine's timers, open streams and every connection — so
 * a test or a CLI shutdown leaves nothing running. As vLLM's `--shutdown-timeout`, a close may
 * drain first: new requests get 503 while those running end, for at most `drainMs`; what still
 * runs then is cut — a stream broken, a whole answer a 503 `shutting_down`, which is given
 * `CUT_GRACE_MS` to reach its client before every connection is closed.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { createEngineServer, type EngineServer, type EngineServerOptions } from './engine-app.ts';
import { wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';

export interface ServeOptions extends EngineServerOptions {
  readonly port?: number;
  readonly host?: string;
}

export interface ListeningEngineServer extends Omit<EngineServer, 'close'> {
  readonly server: Server;
  readonly port: number;
  /** `http://host:port` — the OpenAI base URL is this plus `/v1`. */
  readonly url: string;
  /** Drains for at most `drainMs` (default 0: none), then stops the engine and the server. */
  close(drainMs?: number): Promise<void>;
}

/** How long the answers to requests a close cut have to reach their clients. */
export const CUT_GRACE_MS = 1_000;

export function serveEngine(options: ServeOptions = {}): Promise<ListeningEngineServer> {
  const engine = createEngineServer(options);
  const host = options.host ?? '127.0.0.1';
  const clock = options.clock ?? wallClock;
  const timers = options.timers ?? wallTimers(clock);
  const after = (ms: number) => new Promise<void>((r) => timers.at(clock.now() + ms, r));
  return new Promise((resolve, reject) => {
    const server = serve({
      fetch: engine.app.fetch,
      port: options.port ?? 8000,
      hostname: host,
    }) as Server;
    const failed = (e: Error) => {
      engine.close();
      reject(e);
    };
    server.once('error', failed);
    server.once('listening', () => {
      server.off('error', failed);
      // Listening, an error accepting one connection is said, and the engine serves on.
      server.on('error', (e) => console.error(`goodput engine: server error: ${e.message}`));
      const { port } = server.address() as AddressInfo;
      const shown = host.includes(':') ? `[${host}]` : host;
      resolve({
        ...engine,
        server,
        port,
        url: `http://${shown}:${port}`,
        close: async (drainMs = 0) => {
          if (drainMs > 0) {
            engine.drain();
            await Promise.race([engine.backend.whenIdle(), after(drainMs)]);
          }
          engine.close();
          await new Promise<void>((done) => {
            const cut = timers.at(clock.now() + CUT_GRACE_MS, () => server.closeAllConnections());
            server.close(() => {
              cut.cancel();
              done();
            });
            server.closeIdleConnections();
          });
        },
      });
    });
  });
}
