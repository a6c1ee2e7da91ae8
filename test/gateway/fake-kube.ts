// A Kubernetes API server as far as the actuator uses it, over real HTTP and as the real one
// answers: the scale subresource of one StatefulSet (`autoscaling/v1` Scale), read with GET and
// set with a JSON merge patch of spec.replicas, behind a bearer token; a path it does not serve
// is a 404 Status, a bad token a 401 Status, a patch of another media type a 415. `onScale` is
// told each new replica count (the test's kubelet); `patches` holds them in order. And the
// Leases of the object's namespace (`coordination.k8s.io/v1`): GET (404 when none), POST (409
// AlreadyExists when there is one), PUT over the `resourceVersion` read (409 Conflict when it
// has changed since), each write a new version.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTeardown } from './gateway-kit.ts';

export const SCALE_PATH = 'apis/apps/v1/namespaces/llm/statefulsets/vllm';
/** A LeaderWorkerSet's (a group of pods a replica, for a model over several nodes). */
export const LWS_PATH = 'apis/leaderworkerset.x-k8s.io/v1/namespaces/llm/leaderworkersets/vllm';

/**
 * `serve` flags for a Kubernetes pool on `api`'s StatefulSet, with the token in `tokenFile`,
 * its pod {i} at 127.0.0.1{i}:`port` (each pod on its own loopback address, as on its own IP).
 */
export function kubePoolFlags(api: { readonly url: string }, tokenFile: string, port: number) {
  return [
    '--engine-pool',
    'kubernetes',
    '--k8s-api',
    api.url,
    '--k8s-token-file',
    tokenFile,
    '--k8s-scale',
    SCALE_PATH,
    '--k8s-backend-url',
    `http://127.0.0.1{i}:${port}/v1`,
  ];
}
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/llm/leases';

/** A Lease as stored: its metadata and spec as last written. */
export interface StoredLease {
  readonly metadata: {
    name: string;
    resourceVersion: string;
    annotations?: Record<string, string>;
  };
  readonly spec: { holderIdentity?: string; leaseTransitions?: number };
}

export async function fakeKube(
  token: string,
  initial: number,
  onScale: (replicas: number) => void = () => {},
  /** Where its close is registered: a test's teardown, or nowhere (a bench closes it). */
  teardown: (close: () => Promise<void>) => void = onTeardown,
  /** The object whose scale subresource it serves. */
  scalePath: string = SCALE_PATH,
): Promise<{
  readonly url: string;
  readonly patches: number[];
  replicas(): number;
  readonly leases: Map<string, StoredLease>;
  close(): Promise<void>;
}> {
  let replicas = initial;
  const leases = new Map<string, StoredLease>();
  let version = 100;
  const patches: number[] = [];
  const status = (code: number, reason: string, message: string) =>
    JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, reason, code });
  const scale = () =>
    JSON.stringify({
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: { name: 'vllm', namespace: 'llm' },
      spec: { replicas },
      status: { replicas, selector: 'app=vllm' },
    });
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (b: Buffer) => parts.push(b));
    req.on('end', () => {
      const send = (code: number, body: string) => {
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(body);
      };
      if (req.headers.authorization !== `Bearer ${token}`) {
        return send(401, status(401, 'Unauthorized', 'Unauthorized'));
      }
      if (req.url?.startsWith(LEASES) === true) {
        const name = req.url.slice(LEASES.length + 1);
        const body =
          parts.length === 0
            ? undefined
            : (JSON.parse(Buffer.concat(parts).toString()) as StoredLease);
        const stored = leases.get(name);
        const keep = (l: StoredLease) => {
          const kept = { ...l, metadata: { ...l.metadata, resourceVersion: String(++version) } };
          leases.set(l.metadata.name, kept);
          return JSON.stringify({ kind: 'Lease', apiVersion: 'coordination.k8s.io/v1', ...kept });
        };
        if (req.method === 'GET') {
          if (stored === undefined)
            return send(404, status(404, 'NotFound', `leases "${name}" not found`));
          return send(200, JSON.stringify({ kind: 'Lease', ...stored }));
        }
        if (req.method === 'POST' && name === '' && body !== undefined) {
          if (leases.has(body.metadata.name)) {
            return send(
              409,
              status(409, 'AlreadyExists', `leases "${body.metadata.name}" already exists`),
            );
          }
          return send(201, keep(body));
        }
        if (req.method === 'PUT' && body !== undefined) {
          if (stored?.metadata.resourceVersion !== body.metadata.resourceVersion) {
            const why = `Operation cannot be fulfilled on leases "${name}": the object has been modified`;
            return send(409, status(409, 'Conflict', why));
          }
          return send(200, keep(body));
        }
        return send(405, status(405, 'MethodNotAllowed', req.method ?? ''));
      }
      if (req.url !== `/${scalePath}/scale`) {
        return send(404, status(404, 'NotFound', `the server could not find ${req.url}`));
      }
      if (req.method === 'GET') return send(200, scale());
      if (req.method !== 'PATCH')
        return send(405, status(405, 'MethodNotAllowed', req.method ?? ''));
      if (req.headers['content-type'] !== 'application/merge-patch+json') {
        return send(415, status(415, 'UnsupportedMediaType', String(req.headers['content-type'])));
      }
      const asked = (
        JSON.parse(Buffer.concat(parts).toString()) as { spec?: { replicas?: number } }
      ).spec?.replicas;
      if (typeof asked !== 'number' || asked < 0) {
        return send(422, status(422, 'Invalid', 'spec.replicas: Invalid value'));
      }
      patches.push(asked);
      if (asked !== replicas) {
        replicas = asked;
        onScale(asked);
      }
      return send(200, scale());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const close = () => new Promise<void>((r) => server.close(() => r()));
  teardown(close);
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return { url, patches, replicas: () => replicas, leases, close };
}
