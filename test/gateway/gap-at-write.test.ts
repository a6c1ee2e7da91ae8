// A token gap is what the client sees, so the gateway times a running stream's tokens where
// they leave, at the end of the loop's turn that writes them: a turn held long by other work
// after a token arrived is a gap its client waited through, and the gateway counts it. Flow
// control hears of it too, and plans shorter steps while the host runs late.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type RunningGateway } from '../../src/gateway/serve.ts';
import type { ResolvedPolicy } from '../../src/core/config/policy.ts';
import type {
  Backend,
  BackendLoad,
  StreamEnd,
  TokenSink,
  UpstreamCall,
} from '../../src/gateway/backend.ts';
import {
  ENGINE_DEFAULTS,
  buildEngineConfig,
  buildEngineProfile,
} from '../../src/engine/engine-spec.ts';
import { presetPolicy } from '../../src/core/config/presets.ts';
import type { OutcomeRecord } from '../../src/core/observe/outcome-record.ts';
import { MODEL, metricValue, policyWith } from './gateway-kit.ts';

const TOKENS = 8;
const EVERY_MS = 10;

/**
 * Tokens every 10 ms; with the one numbered `holdAt` it also does `holdMs` of other work in
 * the same turn, as a gateway relaying a flood does between a token's arrival and its write.
 */
class BusyTurnBackend implements Backend {
  readonly name = 'busy-turn';
  holdAt = -1;
  holdMs = 0;

  load(): BackendLoad {
    return { ready: true, running: 0, waiting: 0, kvUsage: 0, atMs: performance.now() };
  }

  async stream(_call: UpstreamCall, onToken: TokenSink): Promise<StreamEnd> {
    for (let i = 0; i < TOKENS; i++) {
      await new Promise((r) => setTimeout(r, EVERY_MS));
      onToken({ text: `t${i} ` });
      if (i === this.holdAt) {
        const until = performance.now() + this.holdMs;
        while (performance.now() < until); // the turn's other work
      }
    }
    await new Promise((r) => setTimeout(r, EVERY_MS));
    return { finishReason: 'length', promptTokens: 4, completionTokens: TOKENS };
  }

  async close(): Promise<void> {}
}

/** A gateway in front of `backend` alone, under `policy`, with no lag shedding. */
function gatewayOn(
  backend: Backend,
  policy: ResolvedPolicy,
  onOutcome?: (r: OutcomeRecord) => void,
): Promise<RunningGateway> {
  const spec = { ...ENGINE_DEFAULTS, profile: 'const:step_ms=2' };
  return startGateway({
    onOutcome,
    policy,
    engine: buildEngineConfig(spec),
    profile: buildEngineProfile(spec),
    servedModelName: MODEL,
    backendUrls: [],
    embedded: () => [backend],
    host: '127.0.0.1',
    port: 0,
    shedLagMs: 0,
  });
}

test('a turn held 150 ms after a token arrived is a gap the gateway counts, as its client does', async () => {
  const backend = new BusyTurnBackend();
  const outcomes: OutcomeRecord['outcome'][] = [];
  const g = await gatewayOn(backend, presetPolicy('baseline-vllm'), (r) =>
    outcomes.push(r.outcome),
  );
  try {
    const client = new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'none', maxRetries: 0 });
    /** One streamed request: the client's largest gap between chunks after the first. */
    const largestGap = async (): Promise<number> => {
      const stream = await client.completions.create({
        model: MODEL,
        prompt: 'hi',
        max_tokens: TOKENS,
        stream: true,
      });
      let last: number | undefined;
      let largest = 0;
      for await (const chunk of stream) {
        if (chunk.choices[0]?.text === '') continue;
        const now = performance.now();
        if (last !== undefined) largest = Math.max(largest, now - last);
        last = now;
      }
      return largest;
    };
    const good = () => metricValue(g.url, 'goodput_good_requests_total');
    const completed = () => metricValue(g.url, 'goodput_completed_requests_total');

    // Tokens 10 ms apart, written as they come: good.
    assert.ok((await largestGap()) < 80);
    assert.deepEqual([await completed(), await good()], [1, 1]);

    // The last token arrives on time, and its turn runs 150 ms on before it is written: the
    // client waits that long for it, and so does the gateway's measure (80 ms p99 objective).
    backend.holdAt = TOKENS - 1;
    backend.holdMs = 150;
    assert.ok((await largestGap()) >= 150);
    assert.deepEqual(
      [await completed(), await good()],
      [2, 1],
      'the stream is counted as the client saw it: over its gap objective',
    );
    // Its outcome record says so, and by how much.
    assert.deepEqual(
      outcomes.map((o) => [o.state, o.good, o.missed]),
      [
        ['completed', true, null],
        ['completed', false, 'itl'],
      ],
    );
    assert.ok((outcomes[1].max_gap_ms ?? 0) >= 150, `max gap ${outcomes[1].max_gap_ms}`);
    assert.ok((outcomes[1].itl_p99_ms ?? 0) > 80, `p99 gap ${outcomes[1].itl_p99_ms}`);
    // The gateway's own share: the token waited the held turn's length before its write.
    assert.ok((outcomes[0].relay_max_ms ?? 99) < 80, `relay ${outcomes[0].relay_max_ms}`);
    assert.ok((outcomes[1].relay_max_ms ?? 0) >= 150, `relay ${outcomes[1].relay_max_ms}`);
  } finally {
    await g.close();
  }
});

test('a gap its client got late cuts the step share flow control plans with, unless the policy trusts the host', async () => {
  for (const feedback of [true, false]) {
    const backend = new BusyTurnBackend();
    const params = feedback ? {} : { gap_feedback: false };
    const g = await gatewayOn(backend, policyWith({ dispatch: { type: 'flow-control', params } }));
    try {
      const share = () => metricValue(g.url, 'goodput_flow_step_gap_share');
      const late = () => metricValue(g.url, 'goodput_late_token_gaps_total');
      const stream = async () => {
        const res = await fetch(`${g.url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: MODEL, prompt: 'hi', max_tokens: TOKENS, stream: true }),
        });
        assert.equal(res.status, 200);
        await res.text();
      };
      // Tokens 10 ms apart: nothing late, the configured share (1 − 0.1 − 0.15).
      await stream();
      assert.deepEqual([await late(), await share()], [0, 0.75]);
      // A token held 150 ms in the gateway before its write: late by the client's clock.
      backend.holdAt = TOKENS - 1;
      backend.holdMs = 150;
      await stream();
      if (feedback) {
        assert.equal(await late(), 1);
        const cut = await share();
        assert.ok(cut >= 0.675 && cut < 0.68, `share ${cut}: cut by 0.9, a little regained`);
      } else {
        assert.deepEqual([await late(), await share()], [0, 0.75], 'gap_feedback: false');
      }
    } finally {
      await g.close();
    }
  }
});
