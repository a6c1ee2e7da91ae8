/**
 * Puts an engine server on a Node HTTP socket (`@hono/node-server`) and resolves once it is
 * listening, with the port it got (pass port 0 for an ephemeral one). Main rule: `close()`
 * releases everything it opened — the engine's timers, open streams and every connection — so
 * a test or a CLI shutdown leaves nothing running.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { createEngineServer, type EngineServer, type EngineServerOptions } from './engine-app.ts';

export interface ServeOptions extends EngineServerOptions {
  readonly port?: number;
  readonly host?: string;
}

export interface ListeningEngineServer extends Omit<EngineServer, 'close'> {
  readonly server: Server;
  readonly port: number;
  /** `http://host:port` — the OpenAI base URL is this plus `/v1`. */
  readonly url: string;
  close(): Promise<void>;
}

export function serveEngine(options: ServeOptions = {}): Promise<ListeningEngineServer> {
  const engine = createEngineServer(options);
  const host = options.host ?? '127.0.0.1';
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
        close: () =>
          new Promise<void>((done) => {
            engine.close();
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
