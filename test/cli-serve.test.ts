// `goodput serve` started as an operator starts it: what it refuses at start, naming the flag,
// and what it says before it listens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { dir, exitsNaming, goodput } from './cli-kit.ts';

test('serve: a decision log it cannot append to fails at start, naming the flag and the path', () => {
  // A directory where the file should be: no server starts, nothing listens.
  const r = goodput('serve', '--port', '0', '--decisions', dir);
  assert.equal(r.code, 2);
  assert.match(r.err, /--decisions: expected a file it can append to \(EISDIR/);
  assert.ok(r.err.includes(JSON.stringify(dir)), r.err);
  assert.doesNotMatch(r.out, /OpenAI API at/);
});

test('serve --help says how API keys are given and how it drains', () => {
  const r = goodput('serve', '--help');
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /Authorization: Bearer <key>/);
  assert.match(r.out, /api_keys_sha256/);
  assert.match(r.out, /--drain-timeout <seconds>/);
});

test('serve: a bad --backend is a clear error at start, naming the flag and the value', () => {
  for (const url of ['notaurl', 'ftp://10.0.0.5:21']) {
    const r = goodput('serve', '--port', '0', '--backend', url);
    assert.equal(r.code, 2, r.err);
    assert.match(
      r.err,
      /^goodput: --backend: expected an http\(s\) URL such as http:\/\/10\.0\.0\.5:8000, got "/,
    );
    assert.doesNotMatch(r.err, /at .*\.ts:\d+/, 'no stack trace');
  }
});

test('serve says at start when the open-file limit would drop a flood of connections', async (t) => {
  if (!existsSync('/proc/self/limits')) return t.skip('no /proc here');
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  const { port } = busy.address() as AddressInfo;
  try {
    // Node lifts its soft limit to the hard one at start, so the hard limit is what counts. A
    // busy port ends the run right after the start-up lines.
    const run = (limit: number) =>
      spawnSync(
        'bash',
        [
          '-c',
          `ulimit -n ${limit} && exec "${process.execPath}" bin/goodput.js serve --port ${port} --profile const:step_ms=2`,
        ],
        { encoding: 'utf8' },
      ).stdout;
    const warned = (out: string) =>
      out
        .split('\n')
        .filter((l) => l.includes('open_files_limit'))
        .map((l) => JSON.parse(l) as { level: number; open_files_limit: number; msg: string });
    const [low] = warned(run(1024));
    assert.equal(low?.open_files_limit, 1024);
    assert.equal(low.level, 40);
    assert.match(low.msg, /ulimit -n/);
    assert.deepEqual(warned(run(8192)), []);
  } finally {
    busy.close();
  }
});

test('serve and engine: a port in use is a clear error (exit 2), not an unhandled EADDRINUSE', async () => {
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  const { port } = busy.address() as AddressInfo;
  try {
    const r = goodput('serve', '--port', String(port), '--profile', 'const:step_ms=2');
    assert.equal(r.code, 2, r.err);
    assert.equal(r.err.trim(), `goodput: --port: expected a free port, got ${port}`);
    // What it said before giving up is operational JSON, one line each.
    for (const line of r.out
      .trim()
      .split('\n')
      .filter((l) => l !== '')) {
      assert.doesNotThrow(() => JSON.parse(line), line);
    }
    const engine = goodput('engine', '--port', String(port));
    assert.equal(engine.code, 2, engine.err);
    assert.equal(engine.err.trim(), `goodput: --port: expected a free port, got ${port}`);
  } finally {
    busy.close();
  }
});

test('serve: a bad autoscaling flag exits 2 naming it, before anything listens', async () => {
  await exitsNaming(
    ['serve', '--port', '0'],
    [
      [['--autoscaler', 'nope'], /--autoscaler/],
      [['--ready-time', 'soon'], /--ready-time/],
      [['--ready-time', '200-100', '--autoscaler', 'none'], /--ready-time/],
      [['--min-replicas', '4', '--max-replicas', '2'], /--max-replicas/],
      [['--burst-headroom', '0.5'], /--burst-headroom/],
      [['--scale-in-window', '-1'], /--scale-in-window/],
      [['--engine-pool', 'cloud'], /--engine-pool/],
      [['--engine-pool', 'local', '--autoscaler', 'none'], /--engine-pool/],
      [['--engine-pool', 'local', '--backend', 'http://127.0.0.1:9'], /--engine-pool/],
      [['--autoscaler', 'none', '--min-replicas', '2'], /--min-replicas: expected unset with/],
      [['--autoscaler', 'none', '--capacity-envelope', 'e.json'], /--capacity-envelope/],
      // Read only by an autoscaler that plans with a group's capacity.
      [
        ['--autoscaler', 'hpa-utilization', '--burst-headroom', '3'],
        /--burst-headroom: expected unset with --autoscaler hpa-utilization \(only an autoscaler that plans with a group's capacity reads it: goodput\), got 3/,
      ],
      [
        ['--autoscaler', 'keda-queue', '--capacity-envelope', 'e.json'],
        /--capacity-envelope: expected unset with --autoscaler keda-queue/,
      ],
    ],
  );
});

test('serve and engine: a bad port, address, Redis URL or model name exits 2 naming its flag, no stack trace', async () => {
  const cases: [args: string[], named: RegExp][] = [
    [['engine', '--port', '99999'], /--port/],
    [['engine', '--served-model-name', ''], /--served-model-name/],
    [
      ['engine', '--num-scheduler-steps', '4'],
      /--num-scheduler-steps: expected 1 under vllm-v1 \(multi-step scheduling is vLLM 0\.6's/,
    ],
    [['engine', '--served-model-name', 'm', '--lora-modules', 'm'], /--lora-modules/],
    [['serve', '--port', '0', '--redis', 'notaurl'], /--redis: expected a Redis URL/],
    [['serve', '--port', '0', '--redis', 'redis://:x@'], /--redis/],
    [['serve', '--port', '0', '--served-model-name', ''], /--served-model-name/],
    [['serve', '--port', '0', '--learned-state', ''], /--learned-state: expected a file, or redis/],
    [['serve', '--port', '0', '--max-replicas', '20000'], /--max-replicas: expected an integer in/],
    [['serve', '--port', '0', '--host', 'nosuchhost.invalid'], /--host: expected an address/],
    [['engine', '--port', '0', '--host', 'nosuchhost.invalid'], /--host: expected an address/],
    // An empty address would be every interface: said, not taken.
    [['serve', '--port', '0', '--host', ''], /--host: expected an address to listen on/],
    [['engine', '--port', '0', '--host', ' '], /--host: expected an address to listen on/],
    // Flags that mean nothing with the others given: refused, not dropped in silence.
    [
      ['serve', '--port', '0', '--gateway-replicas', '5'],
      /--gateway-replicas: expected unset without --redis .*, got 5/,
    ],
    [['serve', '--port', '0', '--redis-failure', 'closed'], /--redis-failure: expected unset/],
    [
      ['serve', '--port', '0', '--backend', 'http://127.0.0.1:9', '--replicas', '3'],
      /--replicas: expected unset with --backend \(it sizes the embedded fleet\), got 3/,
    ],
  ];
  await exitsNaming([], cases);
});
