/**
 * The one thing the Kubernetes actuator asks of the API server: the scale subresource of a
 * scalable object (a StatefulSet, a LeaderWorkerSet, anything `kubectl scale` scales), read with
 * GET and set with a JSON merge patch of `spec.replicas`, as the HPA controller sets it. In a
 * pod, the server and the credentials are the service account's: `KUBERNETES_SERVICE_HOST` and
 * `_PORT`, the token (read again for every call: kubelet rotates it) and the cluster's CA, under
 * /var/run/secrets/kubernetes.io/serviceaccount.
 */
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { ConfigError } from '../core/errors.ts';

const ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
/** How long one call may take. */
const CALL_TIMEOUT_MS = 5_000;

export interface KubeApiOptions {
  /** The API server's base URL; default: the cluster's, from inside a pod. */
  readonly apiUrl?: string;
  /** A file holding the bearer token; default: the service account's, when there is one. */
  readonly tokenFile?: string;
  /** A PEM file of the CA the server's certificate is signed by; default: the cluster's. */
  readonly caFile?: string;
}

/** A scale subresource as the API returns it (`autoscaling/v1` Scale). */
export interface Scale {
  /** The replicas asked for. */
  readonly spec: number;
  /** The replicas there are. */
  readonly status: number;
}

export class KubeScale {
  readonly url: string;
  readonly #tokenFile: string | undefined;
  readonly #ca: Buffer | undefined;

  /** `path`: the object's, from the API root (`apis/apps/v1/namespaces/NS/statefulsets/NAME`). */
  constructor(path: string, o: KubeApiOptions = {}) {
    const base = o.apiUrl ?? inCluster();
    this.url = `${base.replace(/\/+$/, '')}/${path.replace(/^\/+|\/+$/g, '')}/scale`;
    const token = o.tokenFile ?? (existsSync(`${ACCOUNT}/token`) ? `${ACCOUNT}/token` : undefined);
    this.#tokenFile = token;
    const ca = o.caFile ?? (existsSync(`${ACCOUNT}/ca.crt`) ? `${ACCOUNT}/ca.crt` : undefined);
    this.#ca = ca === undefined ? undefined : readFileSync(ca);
  }

  async get(): Promise<Scale> {
    return scaleOf(await this.#call('GET'));
  }

  /** Sets `spec.replicas`; resolves with the scale as the server then holds it. */
  async set(replicas: number): Promise<Scale> {
    return scaleOf(await this.#call('PATCH', JSON.stringify({ spec: { replicas } })));
  }

  #call(method: 'GET' | 'PATCH', body?: string): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#tokenFile !== undefined) {
      headers.authorization = `Bearer ${readFileSync(this.#tokenFile, 'utf8').trim()}`;
    }
    if (body !== undefined) {
      headers['content-type'] = 'application/merge-patch+json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const secure = this.url.startsWith('https:');
    const options = {
      method,
      headers,
      timeout: CALL_TIMEOUT_MS,
      ...(secure ? { ca: this.#ca } : {}),
    };
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(this.url, options, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (b: Buffer) => parts.push(b));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status < 200 || status >= 300) {
            reject(new Error(`${method} ${this.url}: HTTP ${status} ${text.slice(0, 200)}`));
            return;
          }
          try {
            resolve(JSON.parse(text));
          } catch {
            reject(new Error(`${method} ${this.url}: not JSON: ${text.slice(0, 200)}`));
          }
        });
      });
      req.once('error', reject);
      req.once('timeout', () => req.destroy(new Error(`${method} ${this.url}: no answer`)));
      req.end(body);
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

function scaleOf(v: unknown): Scale {
  const s = v as { spec?: { replicas?: unknown }; status?: { replicas?: unknown } } | null;
  const spec = s?.spec?.replicas ?? 0;
  const status = s?.status?.replicas ?? 0;
  if (typeof spec !== 'number' || typeof status !== 'number') {
    throw new Error(`not a Scale: ${JSON.stringify(v).slice(0, 200)}`);
  }
  return { spec, status };
}
