// The policy's SLOs, as /metrics exports them from real requests: every finished request is
// judged once against each SLO that covers it — served, refused, or its client gone — and the
// counters Prometheus computes burn rates from agree with what the clients saw.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MODEL,
  engines,
  gateway,
  metricValue,
  policyWith,
  postChat,
  until,
} from './gateway-kit.ts';

const slow = { profile: 'const:step_ms=10', maxNumSeqs: 4 };

const events = (url: string, slo: string, objective: string, outcome: 'good' | 'bad') =>
  metricValue(url, 'goodput_slo_events_total', { slo, objective, outcome });

test('the default SLOs: a burst beyond capacity spends the success budget by its refusals', async () => {
  const backends = await engines(2, slow);
  const gw = await gateway(backends, 'goodput', { engine: slow });
  const burst = await Promise.all(
    Array.from({ length: 120 }, async () => {
      const res = await postChat(gw.url, { max_tokens: 30, ignore_eos: true });
      await res.text();
      return res.status;
    }),
  );
  const served = burst.filter((s) => s === 200).length;
  const refused = burst.filter((s) => s === 503).length;
  assert.equal(served + refused, burst.length);
  assert.ok(refused > 0 && served > 0, `${served} served, ${refused} refused`);

  const url = gw.url;
  assert.equal(await events(url, 'interactive', 'success', 'good'), served);
  assert.equal(await events(url, 'interactive', 'success', 'bad'), refused);
  // Latency objectives count what was measured: a refused request has no first token.
  const ttft =
    (await events(url, 'interactive', 'ttft', 'good')) +
    (await events(url, 'interactive', 'ttft', 'bad'));
  assert.equal(ttft, served);
  const gaps =
    (await events(url, 'interactive', 'token_gap', 'good')) +
    (await events(url, 'interactive', 'token_gap', 'bad'));
  assert.equal(gaps, served * 29, 'every gap between 30 tokens is an event');
  // Other classes' SLOs saw nothing; their counters are there from the start.
  const text = await (await fetch(`${url}/metrics`)).text();
  assert.match(
    text,
    /^goodput_slo_events_total\{slo="batch",objective="e2e",kind="e2e",outcome="bad"\} 0$/m,
  );
  assert.match(
    text,
    /^goodput_slo_info\{slo="interactive",window="28d",policy_revision="goodput@5"\} 1$/m,
  );

  const labels = { slo: 'interactive', objective: 'success' };
  assert.equal(await metricValue(url, 'goodput_slo_objective_target', labels), 0.995);
  const attainment = await metricValue(url, 'goodput_slo_attainment', labels);
  assert.ok(Math.abs(attainment - served / burst.length) < 1e-9, String(attainment));
  const budget = await metricValue(url, 'goodput_slo_error_budget_remaining', labels);
  const want = 1 - refused / (0.005 * burst.length);
  assert.ok(Math.abs(budget - want) < 1e-9, `${budget} against ${want}`);
});

test('SLOs by model, with exclusions: a bad request left out, a client gone mid-stream counted', async () => {
  const backends = await engines(1);
  const objectives = [
    { kind: 'success', target: 0.9 },
    { kind: 'ttft', threshold_ms: 5_000, target: 0.9 },
  ];
  const gw = await gateway(
    backends,
    policyWith({
      slos: [
        {
          name: 'llama',
          population: { model: MODEL },
          window: '5m',
          objectives,
          exclusions: ['client_error'],
        },
        { name: 'mistral', population: { model: 'mistral' }, window: '5m', objectives },
      ],
    }),
  );
  for (let i = 0; i < 2; i++) {
    const res = await postChat(gw.url, { max_tokens: 4 });
    assert.equal(res.status, 200);
    await res.text();
  }
  const tooLong = await postChat(gw.url, { max_tokens: 1_000_000 });
  await tooLong.text();
  assert.equal(tooLong.headers.get('x-goodput-reason'), 'context_length');

  const leaving = new AbortController();
  const stream = await gw.client.chat.completions.create(
    {
      model: MODEL,
      messages: [{ role: 'user', content: 'long answer' }],
      max_tokens: 2_000,
      stream: true,
      ...{ ignore_eos: true },
    },
    { signal: leaving.signal },
  );
  let seen = 0;
  try {
    for await (const _ of stream) if (++seen === 3) leaving.abort();
  } catch {
    // The client reports its own abort; the gateway's count is what matters here.
  }
  const url = gw.url;
  await until(async () => (await events(url, 'llama', 'success', 'bad')) === 1);
  assert.equal(await events(url, 'llama', 'success', 'good'), 2);
  assert.equal(
    await events(url, 'llama', 'ttft', 'good'),
    3,
    'the stream left had its first token',
  );
  const excluded = { slo: 'llama', exclusion: 'client_error' };
  assert.equal(await metricValue(url, 'goodput_slo_excluded_requests_total', excluded), 1);
  assert.equal(await metricValue(url, 'goodput_slo_events_total', { slo: 'mistral' }), 0);
});
