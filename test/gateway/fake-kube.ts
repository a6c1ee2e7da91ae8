// A Kubernetes API server as far as the actuator uses it, over real HTTP and as the real one
// answers: the scale subresource of one StatefulSet (`autoscaling/v1` Scale), read with GET and
// set with a JSON merge patch of spec.replicas, behind a bearer token; a path it does not serve
// is a 404 Status, a bad token a 401 Status, a patch of another media type a 415. `onScale` is
// told each new replica count (the test's kubelet); `patches` holds them in order.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTeardown } from './gateway-kit.ts';

export const SCALE_PATH = 'apis/apps/v1/namespaces/llm/statefulsets/vllm';

export async function fakeKube(
  token: string,
  initial: number,
  onScale: (replicas: number) => void = () => {},
): Promise<{ readonly url: string; readonly patches: number[]; replicas(): number }> {
  let replicas = initial;
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
      if (req.url !== `/${SCALE_PATH}/scale`) {
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
  onTeardown(() => new Promise<void>((r) => server.close(() => r())));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, patches, replicas: () => replicas };
}
