/**
 * How the gateway talks to Redis: one client for its shared state (`redis-store.ts`), and one for
 * its learned state (`learned-state-store.ts`), made alike.
 */
import { createClient } from 'redis';
import type { Ms } from '../../core/request/units.ts';

/**
 * A Redis client as the gateway keeps one: while disconnected, commands fail at once instead of
 * queueing behind the reconnect, and it never gives up reconnecting (the server may come back
 * at any time). Not yet connected.
 */
export function gatewayRedisClient(
  url: string,
  connectTimeoutMs: Ms,
  commandTimeoutMs: Ms,
): ReturnType<typeof createClient> {
  return createClient({
    url,
    disableOfflineQueue: true,
    commandOptions: { timeout: commandTimeoutMs },
    socket: {
      connectTimeout: connectTimeoutMs,
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1_000),
    },
  });
}
