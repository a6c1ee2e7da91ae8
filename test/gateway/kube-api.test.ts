// The scale subresource over real HTTP, against a fake API server that answers as the real one:
// read, set with a merge patch and the bearer token from its file (read again on every call, as
// kubelet rotates it), and a wrong path or token an error naming the call and the status.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeScale } from '../../src/gateway/kube-api.ts';
import { CALL_TIMEOUT_MS, KubeClient, KubeError } from '../../src/gateway/kube-client.ts';
import { VirtualClock } from '../../src/runtime/virtual-clock.ts';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runGoodput } from './process-kit.ts';
import { LWS_PATH, SCALE_PATH, fakeKube } from './fake-kube.ts';
import { onTeardown } from './gateway-kit.ts';
import { tempDir } from '../temp-dir.ts';
import { wallClock } from '../../src/runtime/wall-clock.ts';
import { wallTimers } from '../../src/runtime/wall-timers.ts';

const WALL = { clock: wallClock, timers: wallTimers(wallClock) };

test('GET and PATCH the scale subresource, with the token its file holds', async () => {
  const api = await fakeKube('t0k3n', 2);
  const tokenFile = join(tempDir('kube'), 'token');
  writeFileSync(tokenFile, 't0k3n\n');
  const scale = new KubeScale(
    SCALE_PATH,
    new KubeClient({ apiUrl: `${api.url}/`, tokenFile }, WALL),
  );
  assert.equal(scale.url, `${api.url}/${SCALE_PATH}/scale`);
  assert.deepEqual(await scale.get(), { spec: 2, status: 2 });
  assert.deepEqual(await scale.set(4), { spec: 4, status: 4 });
  assert.deepEqual(api.patches, [4]);
  writeFileSync(tokenFile, 'rotated-away');
  await assert.rejects(scale.get(), /GET http:\S+\/scale: HTTP 401 .*Unauthorized/);
  writeFileSync(tokenFile, 't0k3n');
  const client = new KubeClient({ apiUrl: api.url, tokenFile }, WALL);
  const wrong = new KubeScale('apis/apps/v1/namespaces/llm/statefulsets/nope', client);
  await assert.rejects(wrong.set(1), /PATCH \S+nope\/scale: HTTP 404 .*NotFound/);
});

test("a LeaderWorkerSet's scale subresource is read and set as a StatefulSet's", async () => {
  const api = await fakeKube('t0k3n', 2, () => {}, onTeardown, LWS_PATH);
  const tokenFile = join(tempDir('kube'), 'token');
  writeFileSync(tokenFile, 't0k3n');
  const scale = new KubeScale(LWS_PATH, new KubeClient({ apiUrl: api.url, tokenFile }, WALL));
  assert.deepEqual(await scale.get(), { spec: 2, status: 2 });
  assert.deepEqual(await scale.set(3), { spec: 3, status: 3 });
  assert.deepEqual(api.patches, [3]);
});

test('an answer that trickles in is cut at the call time; a 429 says when to come back', async () => {
  let mode: 'trickle' | 'busy' = 'trickle';
  const server = createServer((_req, res) => {
    if (mode === 'busy') {
      res.writeHead(429, { 'retry-after': '7', 'content-type': 'application/json' });
      return void res.end('{"reason":"TooManyRequests"}');
    }
    // Headers, then a byte now and then: no socket ever idle, no answer ever whole.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{');
    const drip = setInterval(() => res.write(' '), 50);
    res.once('close', () => clearInterval(drip));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTeardown(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const clock = new VirtualClock();
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new KubeClient({ apiUrl: url }, { clock, timers: clock });
  const call = client.call('GET', client.url('apis/x'));
  const failed = call.then(
    () => 'answered',
    (e: Error) => e.message,
  );
  await new Promise((r) => setTimeout(r, 300));
  clock.run(CALL_TIMEOUT_MS);
  assert.match(await failed, /GET http:\S+\/apis\/x: no whole answer in 5000 ms/);
  mode = 'busy';
  const e = await client.call('PATCH', client.url('apis/x'), {}).catch((err: unknown) => err);
  assert.ok(e instanceof KubeError && e.status === 429 && e.retryAfterMs === 7_000, String(e));
});

test('outside a pod, the API server must be named', () => {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  delete process.env.KUBERNETES_SERVICE_HOST;
  try {
    assert.throws(() => new KubeClient({}, WALL), /--k8s-api: expected the API server's URL/);
  } finally {
    if (host !== undefined) process.env.KUBERNETES_SERVICE_HOST = host;
  }
});

test('serve refuses a kubernetes pool it cannot use at start, naming the flag', async () => {
  const api = await fakeKube('t0k3n', 1);
  const tokenFile = join(tempDir('kube'), 'token');
  writeFileSync(tokenFile, 'wrong');
  const pool = ['--engine-pool', 'kubernetes', '--k8s-api', api.url];
  for (const [args, says] of [
    [
      [...pool, '--k8s-backend-url', 'http://vllm-{i}:8000'],
      /--k8s-scale: expected the scalable object/,
    ],
    [
      [...pool, '--k8s-scale', SCALE_PATH, '--k8s-backend-url', 'http://vllm:8000'],
      /--k8s-backend-url: expected replica \{i\}'s URL/,
    ],
    [
      [
        ...pool,
        '--k8s-scale',
        SCALE_PATH,
        '--k8s-backend-url',
        'http://vllm-{i}:8000',
        '--k8s-token-file',
        tokenFile,
      ],
      /--k8s-scale: expected a scalable object the gateway may read and scale \(GET \S+: HTTP 401/,
    ],
    [
      ['--k8s-scale', SCALE_PATH],
      /--k8s-scale: expected --engine-pool kubernetes with it, got "none"/,
    ],
  ] as const) {
    const run = await runGoodput(['serve', '--port', '0', ...args]);
    assert.equal(run.code, 2, run.out);
    assert.match(run.out, says);
  }
});
