/**
 * vLLM's `--api-key`: every path under `/v1` needs `Authorization: Bearer <key>`, one of the
 * keys given, and is otherwise answered 401 `{"error": "Unauthorized"}` as vLLM answers it; the
 * probes and the scrape (`/health`, `/metrics`) stay open, and so do CORS preflights. Keys are
 * compared as SHA-256 digests in constant time, each one, so the time taken tells nothing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Hono } from 'hono';

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

export function requireApiKey(app: Hono, keys: readonly string[]): void {
  if (keys.length === 0) return;
  const digests = keys.map(digest);
  app.use('*', async (c, next) => {
    if (c.req.method === 'OPTIONS' || !c.req.path.startsWith('/v1')) return next();
    const [scheme, ...rest] = (c.req.header('authorization') ?? '').split(' ');
    const presented = digest(rest.join(' '));
    let match = false;
    for (const d of digests) match = timingSafeEqual(d, presented) || match;
    if (scheme.toLowerCase() === 'bearer' && match) return next();
    return c.json({ error: 'Unauthorized' }, 401);
  });
}
