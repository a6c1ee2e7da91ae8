// Two gateway processes share one tenant's quota through a real redis-server: what one gateway
// spends, the other refuses with 429 `tenant_tokens`. Then Redis dies: the gateway that fails
// open (B) keeps serving under local limits, the one that fails closed (A) answers 503, both
// stay healthy and report `goodput_shared_store_up 0`; Redis returns and both recover on their
// own. (Each gateway's own pipeline also enforces the quota on what it served itself, so the
// gateway that spent is not the one asked to serve afterwards.)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createClient } from 'redis';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sha256 } from '../../src/gateway/api-keys.ts';
import { engines, metricValue, postChat, until } from './gateway-kit.ts';
import { startRedis } from './redis-kit.ts';
import { runGoodput, startServe } from './process-kit.ts';
import { tempDir } from '../temp-dir.ts';

interface GatewayProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything it printed, stdout and stderr. */
  readonly output: () => string;
}

const redis = await startRedis();
const [backend] = await engines(1);
const dir = tempDir('shared');
const policyFile = join(dir, 'policy.json');
writeFileSync(
  policyFile,
  JSON.stringify({
    name: 'shared',
    policy_revision: 'shared@1',
    admission: { type: 'goodput' },
    dispatch: { type: 'flow-control' },
    routing: { type: 'least-request' },
    tenants: {
      acme: {
        api_keys_sha256: [sha256('sk-acme').toString('hex')],
        // Room for two of the requests below (≈ 108 tokens each), and no refill to speak of.
        quotas: { window_ms: 600_000, tokens_per_window: 300 },
      },
    },
  }),
);

async function startGatewayProcess(failure: 'open' | 'closed'): Promise<GatewayProcess> {
  const child = spawn(
    process.execPath,
    [
      'bin/goodput.js',
      'serve',
      '--backend',
      backend.url,
      '--redis',
      redis.url,
      '--redis-failure',
      failure,
      '--gateway-replicas',
      '2',
      '--policy',
      policyFile,
      '--port',
      '0',
      '--profile',
      'const:step_ms=2',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (d) => (output += String(d)));
  child.stderr?.on('data', (d) => (output += String(d)));
  after(async () => {
    if (child.exitCode !== null) return;
    await new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGTERM');
    });
  });
  await until(() => /OpenAI API at (\S+)\/v1/.test(output) || child.exitCode !== null, 4_000);
  const url = /OpenAI API at (\S+)\/v1/.exec(output)?.[1];
  assert.ok(url, `the gateway did not start:\n${output}`);
  await until(async () => (await fetch(`${url}/readyz`)).status === 200, 2_000);
  return { url, child, output: () => output };
}

const [a, b] = await Promise.all([startGatewayProcess('closed'), startGatewayProcess('open')]);

function ask(g: GatewayProcess, idempotencyKey?: string): Promise<Response> {
  return postChat(
    g.url,
    { max_tokens: 100, ignore_eos: true },
    {
      authorization: 'Bearer sk-acme',
      ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
    },
  );
}

/** The answer B served while Redis was down, under an Idempotency-Key. */
let servedInOutage: string | undefined;

const storeUp = (g: GatewayProcess) => metricValue(g.url, 'goodput_shared_store_up');

test('what gateway A spends of a tenant quota, gateway B refuses: 429 tenant_tokens', async () => {
  assert.equal(await storeUp(a), 1);
  // Each answer tells the quota as the shared bucket stands (quota-headers.ts).
  const left = (res: Response) => Number(res.headers.get('x-ratelimit-remaining-tokens'));
  const told: number[] = [];
  for (let i = 0; i < 2; i++) {
    const res = await ask(a);
    assert.equal(res.status, 200, await res.text());
    assert.equal(res.headers.get('x-ratelimit-limit-tokens'), '300');
    told.push(left(res));
  }
  assert.ok(told[0] < 300 - 100 && told[1] < told[0], told.join(', '));
  const refused = await ask(b);
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('x-goodput-reason'), 'tenant_tokens');
  assert.ok(Number(refused.headers.get('retry-after')) >= 1, 'with a Retry-After');
  // B was told what A left, from Redis: less than the request's charge.
  assert.ok(left(refused) < 108, String(left(refused)));
  assert.match(refused.headers.get('x-ratelimit-reset-tokens') ?? '', /^\d+m[\d.]+s$/);
  const body = (await refused.json()) as { error: { code: string } };
  assert.equal(body.error.code, 'tenant_tokens');
});

test('a request larger than the whole window: a final 429, no Retry-After, nothing spent', async () => {
  const res = await postChat(
    a.url,
    { max_tokens: 400, ignore_eos: true },
    { authorization: 'Bearer sk-acme' },
  );
  assert.equal(res.status, 429);
  assert.equal(res.headers.get('x-goodput-reason'), 'tenant_tokens');
  assert.equal(res.headers.get('retry-after'), null, 'no wait makes room for it');
  assert.equal(res.headers.get('x-should-retry'), 'false');
  // Told where the shared bucket stands, from Redis, as every answer is: it took nothing.
  assert.equal(res.headers.get('x-ratelimit-limit-tokens'), '300');
  assert.ok(Number(res.headers.get('x-ratelimit-remaining-tokens')) < 108);
  const body = (await res.json()) as { error: { message: string } };
  assert.match(
    body.error.message,
    /^this request needs \d+ tokens \(prompt \d+ \+ max_tokens 400\); the tenant's whole window holds 300 \(tokens_per_window\), so no retry can succeed$/,
  );
});

test('Redis dies: open serves under local limits, closed answers 503; both stay up', async () => {
  await redis.kill();
  await until(async () => (await storeUp(a)) === 0 && (await storeUp(b)) === 0, 4_000);
  const served = await ask(b, 'outage-1');
  assert.equal(served.status, 200, 'failing open, B serves from its own half of the quota');
  servedInOutage = await served.text();
  const closed = await ask(a);
  assert.equal(closed.status, 503);
  assert.equal(closed.headers.get('x-goodput-reason'), 'service_capacity');
  assert.ok(Number(closed.headers.get('retry-after')) >= 1);
  // It says what is down, not that the service is full.
  assert.match(await closed.text(), /shared state \(Redis\) is unreachable/);
  for (const g of [a, b]) {
    assert.equal((await fetch(`${g.url}/healthz`)).status, 200);
    assert.equal(g.child.exitCode, null, 'still running');
    assert.equal(g.output().match(/shared state store is down/g)?.length, 1, g.output());
  }
  assert.match(b.output(), /failing open: local limits \(1\/2 of each quota\)/);
  assert.match(a.output(), /failing closed/);
});

test('Redis returns: both gateways recover on their own, and a key B took while it was down is replayed by A', async () => {
  await redis.restart();
  await until(async () => (await storeUp(a)) === 1 && (await storeUp(b)) === 1, 4_000);
  // B moves what its fallback took to Redis as it comes back.
  const raw = createClient({ url: redis.url });
  await raw.connect();
  await until(async () => (await raw.keys('*:idem:outage-1')).length === 1, 4_000);
  raw.destroy();
  const replay = await ask(a, 'outage-1');
  assert.equal(replay.status, 200);
  assert.equal(await replay.text(), servedInOutage, 'the answer B served, not a second run');
  const res = await ask(b);
  assert.equal(res.status, 200, 'the restarted Redis holds a fresh quota');
  await res.text();
  const again = await ask(a);
  await again.text();
  assert.notEqual(again.status, 503, 'A no longer refuses for want of shared state');
  for (const g of [a, b]) {
    assert.equal(g.output().match(/shared state store is up/g)?.length, 1, g.output());
    assert.equal(g.child.exitCode, null);
  }
});

test('$GOODPUT_REDIS_URL gives the Redis when --redis does not (a password kept out of ps); a bad one is refused naming it', async () => {
  process.env.GOODPUT_REDIS_URL = 'notaurl';
  const bad = await runGoodput(['serve', '--port', '0']).finally(() => {
    delete process.env.GOODPUT_REDIS_URL;
  });
  assert.equal(bad.code, 2, bad.out);
  assert.match(bad.out, /\$GOODPUT_REDIS_URL: expected a Redis URL/);
  process.env.GOODPUT_REDIS_URL = redis.url;
  const { proc } = await startServe([]).finally(() => {
    delete process.env.GOODPUT_REDIS_URL;
  });
  try {
    const said = () => proc.jsonLines().some((l) => /^shared state in Redis/.test(String(l.msg)));
    await until(said);
  } finally {
    proc.child.kill('SIGKILL');
  }
});

// Last: it pauses the file's Redis and stops gateway A.
test('Redis hangs: B answers by its local limits, the store reads down, and A stops on SIGTERM without waiting for it', async () => {
  const raw = createClient({ url: redis.url });
  await raw.connect();
  const pauseMs = 15_000;
  const pausedUntil = Date.now() + pauseMs;
  await raw.sendCommand(['CLIENT', 'PAUSE', String(pauseMs), 'ALL']);
  raw.destroy();
  // Answered past the command timeout from B's own half of the quota (which its earlier
  // requests spent: a 429), not after the pause.
  const served = await ask(b);
  assert.ok([200, 429].includes(served.status), `${served.status}: ${await served.text()}`);
  assert.ok(Date.now() < pausedUntil, 'B answered while Redis still hung');
  await until(async () => (await storeUp(b)) === 0, 4_000);
  const exited = new Promise<number | null>((resolve) => a.child.once('exit', resolve));
  a.child.kill('SIGTERM');
  assert.equal(await exited, 0, a.output());
  assert.ok(Date.now() < pausedUntil, 'A stopped while Redis still hung');
});
