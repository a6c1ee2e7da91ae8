// A request its client gives up on while it waits in the gateway's queue: counted as offered,
// and recorded as what became of it (`abort`, `client_closed`), so the decisions add up to the
// requests offered, on /metrics and the dashboard alike, and it counts as no failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL, engines, gateway, metricValue, postChat, until } from './gateway-kit.ts';

test('a request cancelled while queued has its record: offered = decisions at the door', async () => {
  const backends = await engines(1, { maxNumSeqs: 1, profile: 'const:step_ms=20' });
  const gw = await gateway(backends, 'goodput', { engine: { maxNumSeqs: 1 } });
  const long = postChat(gw.url, { max_tokens: 60, ignore_eos: true, stream: true }).then((r) =>
    r.text(),
  );
  await until(async () => (await metricValue(gw.url, 'goodput_in_flight_requests')) >= 1);
  // One slot, taken: the next waits in the gateway's queue until its client leaves.
  const leave = new AbortController();
  const waiting = postChat(gw.url, { max_tokens: 4, stream: true }, {}, leave.signal).catch(
    () => 'gone',
  );
  await until(async () => (await metricValue(gw.url, 'goodput_queued_requests')) === 1);
  leave.abort();
  assert.equal(await waiting, 'gone');
  await until(
    async () => (await metricValue(gw.url, 'goodput_cancels_total', { stage: 'queued' })) === 1,
  );
  await long;
  const decided = (labels: Record<string, string> = {}) =>
    metricValue(gw.url, 'goodput_admission_decisions_total', labels);
  assert.equal(await decided({ outcome: 'abort', reason: 'client_closed' }), 1);
  assert.equal(await metricValue(gw.url, 'goodput_offered_requests_total'), 2);
  assert.equal(await decided(), 2, 'one decision a request offered');
  // The dashboard's headline: offered, admitted, rejected, failed…
  type Doc = { headline: { rows: string[][] } };
  const doc = (await (await fetch(`${gw.url}/dashboard/data`)).json()) as Doc;
  const [offered, admitted, rejected, failed] = doc.headline.rows[0];
  assert.deepEqual([offered, admitted, rejected, failed], ['2', '1', '0', '0']);
});

test('a client gone before any answer is counted as answered 499, not as the answer it never got', async () => {
  const gw = await gateway(await engines(1));
  const left = new AbortController();
  left.abort();
  // Refused from its headers (a deadline no request can make), its client already gone.
  const res = await gw.app.request(
    new Request('http://gateway/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goodput-timeout-ms': '1' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }),
      signal: left.signal,
    }),
  );
  assert.equal(res.status, 504, 'what it would have been told');
  const answered = (status: string) =>
    metricValue(gw.url, 'goodput_api_answers_total', { endpoint: 'chat', status });
  assert.equal(await answered('499'), 1);
  assert.equal(await answered('504'), 0);
});
