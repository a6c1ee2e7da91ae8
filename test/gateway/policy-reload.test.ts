// A running gateway reloads its policy file: a rotated API key, a new tenant and a new weight
// take effect at once under the file's new revision, through `POST /admin/policy/reload` and
// SIGHUP, with no restart and no stream lost; a file that does not validate, or that changes
// what only a restart applies, is refused by name and the running policy stays — and
// `/metrics` says the file on disk is not what runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import OpenAI from 'openai';
import { readPolicyFile } from '../../src/sim/policy-source.ts';
import { engines, gateway, metricValue, postChat } from './gateway-kit.ts';
import { policyDoc, policyFile } from './policy-file.ts';
import { printedUrl, runGoodput, spawnGoodput, until } from './process-kit.ts';

const ADMIN = 'admin-secret';
const sha = (key: string) => createHash('sha256').update(key).digest('hex');

const chatAs = async (url: string, key: string) => {
  const res = await postChat(url, { max_tokens: 3 }, { authorization: `Bearer ${key}` });
  await res.arrayBuffer();
  return { status: res.status, id: res.headers.get('x-goodput-request-id') };
};

const admin = (url: string, path: string, method = 'GET') =>
  fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${ADMIN}` } });

test('POST /admin/policy/reload: keys rotate, tenants come, weights change — or the file is refused by name', async () => {
  const file = policyFile();
  file.write(policyDoc('prod@1', { acme: { weight: 1, api_keys_sha256: [sha('sk-acme-1')] } }));
  const loaded = readPolicyFile(file.path);
  const gw = await gateway(await engines(1), loaded.policy, {
    adminToken: ADMIN,
    policySource: loaded,
  });
  assert.equal((await chatAs(gw.url, 'sk-acme-1')).status, 200);
  assert.equal((await chatAs(gw.url, 'sk-beta')).status, 401);
  const same = (await admin(gw.url, '/admin/policy/reload', 'POST').then((r) => r.json())) as {
    result: string;
  };
  assert.equal(same.result, 'unchanged');

  // A stream in flight across the reload ends as it began.
  const streaming = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-acme-1', maxRetries: 0 });
  const stream = await streaming.chat.completions.create({
    model: 'llama-3-8b',
    messages: [{ role: 'user', content: 'hi' }],
    max_tokens: 60,
    stream: true,
  });
  file.write(
    policyDoc('prod@2', {
      acme: { weight: 4, api_keys_sha256: [sha('sk-acme-2')] },
      beta: { api_keys_sha256: [sha('sk-beta')] },
    }),
  );
  const reload = await admin(gw.url, '/admin/policy/reload', 'POST');
  assert.equal(reload.status, 200);
  const applied = (await reload.json()) as Record<string, unknown>;
  assert.deepEqual(
    [applied.result, applied.previous_revision, applied.policy_revision, applied.trigger],
    ['applied', 'prod@1', 'prod@2', 'admin'],
  );
  let tokens = 0;
  for await (const chunk of stream) tokens += chunk.choices[0]?.delta.content === undefined ? 0 : 1;
  assert.ok(tokens > 0, 'the stream in flight went on to its end');

  assert.equal((await chatAs(gw.url, 'sk-acme-1')).status, 401, 'the rotated-out key');
  const beta = await chatAs(gw.url, 'sk-beta');
  assert.equal(beta.status, 200, 'the new tenant');
  assert.equal((await chatAs(gw.url, 'sk-acme-2')).status, 200, 'the new key');
  const record = (await admin(gw.url, `/admin/decisions/${beta.id}`).then((r) => r.json())) as {
    policy_revision: string;
    tenant: string;
  };
  assert.deepEqual([record.policy_revision, record.tenant], ['prod@2', 'beta']);
  assert.equal(gw.gateway.pipeline.vtc.weight('acme'), 4);
  assert.equal(await metricValue(gw.url, 'goodput_policy_info', { policy_revision: 'prod@2' }), 1);
  assert.equal(await metricValue(gw.url, 'goodput_policy_info', { policy_revision: 'prod@1' }), 0);

  // Not valid: 422 naming the path and the value; prod@2 stays in force.
  file.write(policyDoc('prod@3', { beta: { weight: -1, api_keys_sha256: [sha('sk-beta')] } }));
  const invalid = await admin(gw.url, '/admin/policy/reload', 'POST');
  assert.equal(invalid.status, 422);
  const bad = (await invalid.json()) as { error: { message: string; param: string; code: string } };
  assert.equal(bad.error.code, 'invalid_policy');
  assert.equal(bad.error.param, 'tenants.beta.weight');
  assert.match(
    bad.error.message,
    /tenants\.beta\.weight: expected a number > 0, got -1; prod@2 stays/,
  );
  assert.ok(invalid.headers.get('x-goodput-request-id'), 'the refusal carries its id');
  assert.equal(await metricValue(gw.url, 'goodput_policy_last_reload_successful'), 0);
  assert.equal((await chatAs(gw.url, 'sk-beta')).status, 200);

  // A section only a restart applies: 409 naming it.
  file.write({
    ...policyDoc('prod@3', { beta: { api_keys_sha256: [sha('sk-beta')] } }),
    routing: { type: 'round-robin' },
  });
  const restart = await admin(gw.url, '/admin/policy/reload', 'POST');
  assert.equal(restart.status, 409);
  const why = (await restart.json()) as { error: { param: string; code: string } };
  assert.deepEqual([why.error.code, why.error.param], ['restart_required', 'routing']);

  // Put right, it applies, and the gauge says the file is what runs.
  file.write(policyDoc('prod@3', { beta: { api_keys_sha256: [sha('sk-beta')] } }));
  assert.equal((await admin(gw.url, '/admin/policy/reload', 'POST')).status, 200);
  assert.equal(await metricValue(gw.url, 'goodput_policy_last_reload_successful'), 1);
  assert.deepEqual(
    [
      await metricValue(gw.url, 'goodput_policy_reloads_total', { result: 'applied' }),
      await metricValue(gw.url, 'goodput_policy_reloads_total', { result: 'unchanged' }),
      await metricValue(gw.url, 'goodput_policy_reloads_total', { result: 'invalid' }),
      await metricValue(gw.url, 'goodput_policy_reloads_total', { result: 'refused' }),
    ],
    [2, 1, 1, 1],
  );
  const status = (await admin(gw.url, '/admin/policy').then((r) => r.json())) as Record<
    string,
    unknown
  >;
  assert.deepEqual(
    [status.policy_revision, status.file, status.tenants, status.api_keys],
    ['prod@3', file.path, ['beta'], 1],
  );
  assert.equal((await chatAs(gw.url, 'sk-acme-2')).status, 401, 'a tenant the file dropped');

  // A revision in force before may come back only as it was: another meaning is refused.
  file.write(policyDoc('prod@1', { beta: { api_keys_sha256: [sha('sk-beta')] } }));
  const reused = await admin(gw.url, '/admin/policy/reload', 'POST');
  assert.equal(reused.status, 409);
  const again = (await reused.json()) as { error: { param: string; code: string } };
  assert.deepEqual([again.error.code, again.error.param], ['revision_reused', 'policy_revision']);
  file.write(policyDoc('prod@1', { acme: { weight: 1, api_keys_sha256: [sha('sk-acme-1')] } }));
  assert.equal((await admin(gw.url, '/admin/policy/reload', 'POST')).status, 200, 'rolled back');
  assert.equal((await chatAs(gw.url, 'sk-acme-1')).status, 200);
});

test('without an admin token configured, /admin says it is off', async () => {
  const gw = await gateway(await engines(1), 'goodput');
  const answer = await fetch(`${gw.url}/admin/policy`, { headers: { authorization: 'Bearer x' } });
  assert.equal(answer.status, 401);
  const body = (await answer.json()) as { error: { message: string } };
  assert.match(body.error.message, /the admin API is off: .* without --admin-token/);
});

test('the admin endpoints need the admin token; a preset has no file to reload', async () => {
  const gw = await gateway(await engines(1), 'goodput', { adminToken: ADMIN });
  const anonymous = await fetch(`${gw.url}/admin/policy/reload`, { method: 'POST' });
  assert.equal(anonymous.status, 401);
  const wrongMethod = await admin(gw.url, '/admin/policy/reload');
  assert.equal(wrongMethod.status, 405);
  assert.equal(wrongMethod.headers.get('allow'), 'POST');
  const preset = await admin(gw.url, '/admin/policy/reload', 'POST');
  assert.equal(preset.status, 409);
  const body = (await preset.json()) as { error: { code: string; message: string } };
  assert.equal(body.error.code, 'no_policy_file');
  assert.match(body.error.message, /the policy is the preset "goodput", not a file/);
  assert.equal(await metricValue(gw.url, 'goodput_policy_reloads_total', { result: 'refused' }), 1);
  assert.equal(
    await metricValue(gw.url, 'goodput_policy_last_reload_successful', {}),
    1,
    'what runs is still what it was started with: no alert',
  );
  const status = (await admin(gw.url, '/admin/policy').then((r) => r.json())) as Record<
    string,
    unknown
  >;
  assert.deepEqual([status.policy, status.file], ['goodput', null]);
});

test('goodput serve: SIGHUP reloads the file — the new key works, the process stays up and says so', async () => {
  const file = policyFile();
  file.write(policyDoc('prod@1', { acme: { api_keys_sha256: [sha('sk-acme-1')] } }));
  const decisions = `${file.path}.decisions.jsonl`;
  const proc = spawnGoodput([
    ...['serve', '--port', '0', '--replicas', '1', '--policy', file.path],
    ...['--decisions', decisions],
  ]);
  const url = await printedUrl(proc, /OpenAI API at (http[^\s"]+?)\/v1/);
  assert.equal((await chatAs(url, 'sk-acme-1')).status, 200);
  assert.equal((await chatAs(url, 'sk-acme-2')).status, 401);
  file.write(policyDoc('prod@2', { acme: { api_keys_sha256: [sha('sk-acme-2')] } }));
  proc.child.kill('SIGHUP');
  const reloaded = () => proc.jsonLines().find((l) => l.result === 'applied');
  await until('the reload logged', () => reloaded() !== undefined);
  assert.deepEqual(
    [reloaded()?.trigger, reloaded()?.policy_revision, reloaded()?.file],
    ['signal', 'prod@2', file.path],
  );
  assert.equal((await chatAs(url, 'sk-acme-2')).status, 200);
  assert.equal((await chatAs(url, 'sk-acme-1')).status, 401);
  // A file a reload would refuse leaves the gateway as it was, and the log says why.
  file.write(policyDoc('prod@2', { acme: { api_keys_sha256: [sha('sk-acme-3')] } }));
  proc.child.kill('SIGHUP');
  const refused = () => proc.jsonLines().find((l) => l.result === 'refused');
  await until('the refusal logged', () => refused() !== undefined);
  assert.equal(refused()?.code, 'revision_unchanged');
  assert.equal((await chatAs(url, 'sk-acme-2')).status, 200);
  assert.equal(proc.child.exitCode, null, 'still serving');
  proc.child.kill('SIGTERM');
  assert.deepEqual(await proc.exited, { code: 0, signal: null });
  // The decision log has the applied reload between the records of each revision; the refused
  // one changed nothing there.
  const lines = readFileSync(decisions, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg !== 'outcome');
  assert.deepEqual(
    lines.map((l) =>
      l.msg === 'policy_reload' ? `reload to ${l.policy_revision}` : l.policy_revision,
    ),
    ['prod@1', 'prod@1', 'reload to prod@2', 'prod@2', 'prod@2', 'prod@2'],
  );
  const reload = lines.find((l) => l.msg === 'policy_reload');
  assert.deepEqual(
    [reload?.previous_revision, reload?.trigger, reload?.file, reload?.tenants],
    ['prod@1', 'signal', file.path, 1],
  );
});

test('a burst of reloads: one applies the new file, and the asks that wait share one more read', async () => {
  const file = policyFile();
  file.write(policyDoc('prod@1', { acme: { api_keys_sha256: [sha('sk-acme-1')] } }));
  const loaded = readPolicyFile(file.path);
  const gw = await gateway(await engines(1), loaded.policy, {
    adminToken: ADMIN,
    policySource: loaded,
  });
  file.write(policyDoc('prod@2', { acme: { api_keys_sha256: [sha('sk-acme-2')] } }));
  const answers = await Promise.all(
    Array.from({ length: 8 }, () =>
      admin(gw.url, '/admin/policy/reload', 'POST').then(
        async (r) => [r.status, ((await r.json()) as { result: string }).result] as const,
      ),
    ),
  );
  assert.deepEqual(answers.map(([, result]) => result).sort(), [
    'applied',
    ...Array.from({ length: 7 }, () => 'unchanged'),
  ]);
  assert.ok(answers.every(([status]) => status === 200));
  assert.equal(await metricValue(gw.url, 'goodput_policy_reloads_total', { result: 'applied' }), 1);
  // The asks that came while the first read ran waited for one more read, not one each.
  const reads = await metricValue(gw.url, 'goodput_policy_reloads_total', { result: 'unchanged' });
  assert.ok(reads >= 1 && reads <= 2, `${reads} more reads`);
  assert.equal((await chatAs(gw.url, 'sk-acme-2')).status, 200);
});

test('a policy file that lists a tenant twice, or bombs with aliases, is refused naming why', async () => {
  const file = policyFile();
  writeFileSync(
    file.path,
    [
      'name: prod',
      'policy_revision: prod@1',
      'admission: { type: goodput }',
      'routing: { type: least-request }',
      'tenants:',
      '  acme: { weight: 1 }',
      '  beta: { weight: 2 }',
      '  acme: { weight: 3 }',
    ].join('\n'),
  );
  const twice = await runGoodput(['policy', 'check', file.path]);
  assert.equal(twice.code, 2, twice.out);
  assert.match(twice.out, /policy\.yaml: tenants\.acme: expected each key once/);
  // Each level's alias names the one before ten times: 10^8 nodes if expanded.
  const levels = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 9; i++)
    levels.push(
      `a${i}: &a${i} [${Array(10)
        .fill(`*a${i - 1}`)
        .join(', ')}]`,
    );
  writeFileSync(file.path, levels.join('\n'));
  const bomb = await runGoodput(['policy', 'check', file.path]);
  assert.equal(bomb.code, 2, bomb.out);
  assert.match(bomb.out, /policy\.yaml: expected a YAML or JSON policy document, got .*alias/i);
});

test('goodput policy check: a valid file is described, a bad one named by path, a reload judged', async () => {
  const preset = await runGoodput(['policy', 'check', 'goodput', '--running', 'baseline-vllm']);
  assert.equal(preset.code, 1, preset.out);
  assert.match(
    preset.out,
    /^goodput \(a preset\): valid\n {2}policy goodput, revision goodput@\d+/,
  );
  assert.match(preset.out, /running the preset baseline-vllm has no file to reload/);
  const good = await runGoodput(['policy', 'check', 'examples/policy.yaml']);
  assert.equal(good.code, 0, good.out);
  assert.match(good.out, /examples\/policy\.yaml: valid\n {2}policy example, revision example@1\n/);
  assert.match(good.out, /tenants: 2 listed, 0 with API keys \(0 keys\); unlisted tenants served/);

  const file = policyFile();
  file.write(policyDoc('prod@1', { acme: { weight: 0 } }));
  const bad = await runGoodput(['policy', 'check', file.path]);
  assert.equal(bad.code, 2, bad.out);
  assert.match(bad.out, /policy\.yaml: tenants\.acme\.weight: expected a number > 0, got 0/);

  const running = policyFile();
  running.write(policyDoc('prod@1', { acme: { weight: 1 } }));
  file.write(policyDoc('prod@1', { acme: { weight: 2 } }));
  const same = await runGoodput(['policy', 'check', file.path, '--running', running.path]);
  assert.equal(same.code, 1, same.out);
  assert.match(same.out, /would refuse it: tenants changed under the same policy_revision/);
  file.write(policyDoc('prod@2', { acme: { weight: 2 } }));
  const next = await runGoodput(['policy', 'check', file.path, '--running', running.path]);
  assert.equal(next.code, 0, next.out);
  assert.match(next.out, /would take its tenants under prod@2/);

  // A tenant's models, against the names the gateway will serve.
  file.write(policyDoc('prod@3', { acme: { models: ['llama-3-8b', 'sq-lora'] } }));
  const served = ['--served-models', 'llama-3-8b,sql-lora'];
  const typo = await runGoodput(['policy', 'check', file.path, ...served]);
  assert.equal(typo.code, 2, typo.out);
  assert.match(
    typo.out,
    /policy\.yaml: tenants\.acme\.models\[1\]: expected a served model \(llama-3-8b, sql-lora\), got "sq-lora"/,
  );
  file.write(policyDoc('prod@3', { acme: { models: ['llama-3-8b', 'sql-lora'] } }));
  assert.equal((await runGoodput(['policy', 'check', file.path, ...served])).code, 0);
});
