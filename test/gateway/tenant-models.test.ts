// A tenant's models: a policy grants a tenant the served models it may use (the base model, its
// LoRA adapters), and to that tenant the others do not exist — `/v1/models` lists only its own,
// and a request for another's adapter is the 404 of a model that does not exist, naming only
// its own, with a decision record like any refusal. A name no backend serves is refused at
// start and on reload, by its path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import { readPolicyFile } from '../../src/sim/policy-source.ts';
import { MODEL, engines, gateway, metricValue, policyWith } from './gateway-kit.ts';
import { policyDoc, policyFile } from './policy-file.ts';

const ADMIN = 'admin-secret';
const ADAPTERS = ['sql-lora', 'chat-lora'];
const lora = { loraModules: ADAPTERS, maxLoras: 2, loraLoadMs: 5 };
const sha = (key: string) => createHash('sha256').update(key).digest('hex');

/** The policy at `revision`: acme granted `acmeModels`, beta an adapter, gamma every model. */
const modelsDoc = (revision: string, acmeModels: string[]) =>
  policyDoc(revision, {
    acme: { api_keys_sha256: [sha('sk-acme')], models: acmeModels },
    beta: { api_keys_sha256: [sha('sk-beta')], models: ['chat-lora'] },
    gamma: { api_keys_sha256: [sha('sk-gamma')] },
  });

const ask = (model: string) => ({
  model,
  messages: [{ role: 'user' as const, content: 'Which models may I use?' }],
  max_tokens: 3,
});

test("each tenant sees and uses its own models; another's adapter is a model that does not exist", async () => {
  const file = policyFile();
  file.write(modelsDoc('prod@1', [MODEL, 'sql-lora']));
  const loaded = readPolicyFile(file.path);
  const gw = await gateway(await engines(1, lora), loaded.policy, {
    engine: lora,
    adminToken: ADMIN,
    policySource: loaded,
  });
  const as = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
  const listed = async (key: string) =>
    (await as(key).models.list()).data.map((m) => [m.id, (m as { parent?: unknown }).parent]);
  assert.deepEqual(await listed('sk-acme'), [
    [MODEL, null],
    ['sql-lora', MODEL],
  ]);
  assert.deepEqual(await listed('sk-beta'), [['chat-lora', MODEL]]);
  assert.deepEqual(await listed('sk-gamma'), [
    [MODEL, null],
    ['sql-lora', MODEL],
    ['chat-lora', MODEL],
  ]);

  const served = await as('sk-acme').chat.completions.create(ask('sql-lora'));
  assert.equal(served.model, 'sql-lora');
  assert.equal((await as('sk-beta').chat.completions.create(ask('chat-lora'))).model, 'chat-lora');
  assert.equal((await as('sk-gamma').chat.completions.create(ask('chat-lora'))).model, 'chat-lora');

  // acme asks for beta's adapter: the answer a model that does not exist gets, naming only its own.
  const theirs = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-acme', 'content-type': 'application/json' },
    body: JSON.stringify(ask('chat-lora')),
  });
  assert.equal(theirs.status, 404);
  assert.equal(theirs.headers.get('x-goodput-reason'), 'unknown_model');
  const body = (await theirs.json()) as { error: { message: string; code: string; param: string } };
  assert.deepEqual([body.error.code, body.error.param], ['model_not_found', 'model']);
  assert.equal(
    body.error.message,
    `model: expected one of ${MODEL}, sql-lora, got "chat-lora" (the model does not exist)`,
  );
  const nowhere = await as('sk-acme')
    .chat.completions.create(ask('nowhere'))
    .catch((e: { status: number; message: string }) => e);
  assert.ok('status' in nowhere && nowhere.status === 404);
  assert.match(nowhere.message, /expected one of llama-3-8b, sql-lora, got "nowhere"/);
  // Found by its id, like every refusal.
  const id = theirs.headers.get('x-goodput-request-id');
  const record = (await fetch(`${gw.url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  }).then((r) => r.json())) as { admission: { reason: string }; tenant: string };
  assert.deepEqual([record.admission.reason, record.tenant], ['unknown_model', 'acme']);
  // beta, granted an adapter only, asks for the base model.
  const base = await as('sk-beta')
    .chat.completions.create(ask(MODEL))
    .catch((e: { status: number; message: string }) => e);
  assert.ok('status' in base && base.status === 404);
  assert.match(base.message, /expected one of chat-lora, got "llama-3-8b"/);
  assert.equal(
    await metricValue(gw.url, 'goodput_invalid_requests_total', { reason: 'unknown_model' }),
    3,
  );

  // A reload that grants a model no backend serves is refused by its path; prod@1 stays.
  file.write(modelsDoc('prod@2', ['sql-lora', 'gone-lora']));
  const reload = await fetch(`${gw.url}/admin/policy/reload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(reload.status, 422);
  const why = (await reload.json()) as { error: { message: string; param: string } };
  assert.equal(why.error.param, 'tenants.acme.models[1]');
  assert.match(
    why.error.message,
    /expected a served model \(llama-3-8b, sql-lora, chat-lora\), got "gone-lora"; prod@1 stays in force/,
  );
  assert.deepEqual(await listed('sk-acme'), [
    [MODEL, null],
    ['sql-lora', MODEL],
  ]);
  // And one that serves: acme loses the base model at once.
  file.write(modelsDoc('prod@3', ['sql-lora', 'chat-lora']));
  const applied = await fetch(`${gw.url}/admin/policy/reload`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(applied.status, 200);
  assert.deepEqual(await listed('sk-acme'), [
    ['sql-lora', MODEL],
    ['chat-lora', MODEL],
  ]);
});

test('a gateway whose policy grants a model no backend serves does not start, and says which', async () => {
  const policy = policyWith({ tenants: { acme: { models: [MODEL, 'sq-lora'] } } });
  await assert.rejects(gateway(await engines(1, lora), policy, { engine: lora }), {
    name: 'ConfigError',
    message:
      'tenants.acme.models[1]: expected a served model (llama-3-8b, sql-lora, chat-lora), got "sq-lora"',
  });
});
