/**
 * Calls to the Kubernetes API server, as the actuator makes them: JSON in and out, a bearer
 * token and the server's CA. In a pod, the server and the credentials are the service account's:
 * `KUBERNETES_SERVICE_HOST` and `_PORT`, the token (read again for every call: kubelet rotates
 * it) and the cluster's CA, under /var/run/secrets/kubernetes.io/serviceaccount. An answer
 * outside 2xx rejects with a `KubeError` that keeps its status, so a caller can tell a conflict
 * (409: someone else wrote first) from a refusal, and the server's Retry-After (a 429's, a
 * 503's). A call has `CALL_TIMEOUT_MS` for its whole answer: one that trickles in a byte at a
 * time fails then, as one that never comes does.
 */
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { ConfigError } from '../core/errors.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import { parseRetryAfter } from '../core/resilience/retry-after.ts';

const ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
/** How long one call may take, its whole answer read. */
export const CALL_TIMEOUT_MS: Ms = 5_000;

export interface KubeApiOptions {
  /** The API server's base URL; default: the cluster's, from inside a pod. */
  readonly apiUrl?: string;
  /** A file holding the bearer token; default: the service account's, when there is one. */
  readonly tokenFile?: string;
  /** A PEM file of the CA the server's certificate is signed by; default: the cluster's. */
  readonly caFile?: string;
}

export type KubeMethod = 'GET' | 'PATCH' | 'POST' | 'PUT';

/**
 * The API server answered outside 2xx; `status` 0 when it did not answer. `retryAfterMs`: when
 * it said to come back.
 */
export class KubeError extends Error {
  readonly status: number;
  readonly retryAfterMs: Ms | undefined;

  constructor(message: string, status: number, retryAfterMs?: Ms) {
    super(message);
    this.name = 'KubeError';
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }
}

export class KubeClient {
  /** The API server's base URL, without a trailing slash. */
  readonly base: string;
  readonly #tokenFile: string | undefined;
  readonly #ca: Buffer | undefined;
  readonly #at: { readonly clock: Clock; readonly timers: Timers };

  constructor(o: KubeApiOptions, at: { readonly clock: Clock; readonly timers: Timers }) {
    this.#at = at;
    this.base = (o.apiUrl ?? inCluster()).replace(/\/+$/, '');
    const token = o.tokenFile ?? (existsSync(`${ACCOUNT}/token`) ? `${ACCOUNT}/token` : undefined);
    this.#tokenFile = token;
    const ca = o.caFile ?? (existsSync(`${ACCOUNT}/ca.crt`) ? `${ACCOUNT}/ca.crt` : undefined);
    this.#ca = ca === undefined ? undefined : readFileSync(ca);
  }

  /** The URL of `path`, from the API root. */
  url(path: string): string {
    return `${this.base}/${path.replace(/^\/+|\/+$/g, '')}`;
  }

  /** `body` is sent as JSON, or as a merge patch for PATCH; resolves with the parsed answer. */
  call(method: KubeMethod, url: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#tokenFile !== undefined) {
      headers.authorization = `Bearer ${readFileSync(this.#tokenFile, 'utf8').trim()}`;
    }
    const text = body === undefined ? undefined : JSON.stringify(body);
    if (text !== undefined) {
      headers['content-type'] =
        method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
      headers['content-length'] = String(Buffer.byteLength(text));
    }
    const secure = url.startsWith('https:');
    const options = { method, headers, ...(secure ? { ca: this.#ca } : {}) };
    const { clock, timers } = this.#at;
    return new Promise((resolve, reject) => {
      const overdue = timers.at(clock.now() + CALL_TIMEOUT_MS, () =>
        req.destroy(new Error(`no whole answer in ${CALL_TIMEOUT_MS} ms`)),
      );
      const fail = (e: KubeError) => {
        overdue.cancel();
        reject(e);
      };
      const req = (secure ? https : http).request(url, options, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (b: Buffer) => parts.push(b));
        res.on('error', (e) => fail(new KubeError(`${method} ${url}: ${e.message}`, 0)));
        res.on('end', () => {
          overdue.cancel();
          const answer = Buffer.concat(parts).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status < 200 || status >= 300) {
            const why = `${method} ${url}: HTTP ${status} ${answer.slice(0, 200)}`;
            const after = parseRetryAfter(res.headers['retry-after'], res.headers.date);
            reject(new KubeError(why, status, after));
            return;
          }
          try {
            resolve(JSON.parse(answer));
          } catch {
            reject(new KubeError(`${method} ${url}: not JSON: ${answer.slice(0, 200)}`, status));
          }
        });
      });
      req.once('error', (e) => fail(new KubeError(`${method} ${url}: ${e.message}`, 0)));
      req.end(text);
    });
  }
}

function inCluster(): string {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? '443';
  if (host === undefined || host === '') {
    throw new ConfigError(
      '--k8s-api',
      "the API server's URL (outside a pod there is no default)",
      'none',
    );
  }
  return `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
