// Four classes at once, live: 500 requests over ~2 s, round-robin over interactive, reasoning,
// batch and best_effort, against two slow engines. No priority inversion of the kind an
// operator sees: a reasoning request refused while a best-effort request sent before it still
// waits — its stream not started — and is later served. (A best-effort stream already under way
// when a reasoning request is refused is not one: it was dispatched before the pressure; each
// stream's start is when its response begins, at its first token.) Best effort runs on leftover
// capacity (none is left while a class above is refusing for its wait), and reasoning, which may
// queue, is admitted on its slack while lower work waits, rather than held to the short
// queue-delay target. A reasoning request refused for want of slack — its decision record
// predicts a missed first-token deadline, as when a starved CPU slows the replicas — is a
// goodput call, not an inversion; one refused with slack left is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engines, gateway, metricValue, postChat } from './gateway-kit.ts';

const slow = { profile: 'const:step_ms=10', maxNumSeqs: 8 };
const CLASSES = ['interactive', 'reasoning', 'batch', 'best_effort'] as const;

interface Sent {
  readonly cls: (typeof CLASSES)[number];
  readonly sentMs: number;
  /** When the response began: a stream's first token, or the refusal. */
  readonly startMs: number;
  readonly endMs: number;
  readonly status: number;
  readonly id: string;
}

const ADMIN = 'class-mix-admin';

/** The TTFT slack admission saw for a refused request (its decision record), null if none. */
async function slackAtRefusal(url: string, id: string): Promise<number | null> {
  const res = await fetch(`${url}/admin/decisions/${id}`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(res.status, 200, `no decision record for ${id}`);
  const record = (await res.json()) as { admission: { slack_ms: number | null } };
  return record.admission.slack_ms;
}

test('500 requests in four classes: no reasoning refusal while earlier best-effort work waits to be served', async (t) => {
  const backends = await engines(2, slow);
  const gw = await gateway(backends, 'goodput', { engine: slow, adminToken: ADMIN });
  const t0 = performance.now();
  const all: Promise<Sent>[] = [];
  for (let i = 0; i < 500; i++) {
    const cls = CLASSES[i % 4];
    all.push(
      (async () => {
        const sentMs = performance.now() - t0;
        const res = await postChat(
          gw.url,
          { max_tokens: 40, ignore_eos: true, stream: true },
          { 'x-goodput-class': cls },
        );
        const startMs = performance.now() - t0;
        await res.arrayBuffer();
        const endMs = performance.now() - t0;
        const id = res.headers.get('x-goodput-request-id') ?? '';
        return { cls, sentMs, startMs, endMs, status: res.status, id };
      })(),
    );
    await new Promise((r) => setTimeout(r, 4));
  }
  const sent = await Promise.all(all);
  const of = (cls: Sent['cls']) => sent.filter((s) => s.cls === cls);
  const refusedReasoning = of('reasoning').filter((s) => s.status !== 200);
  const servedBestEffort = of('best_effort').filter((s) => s.status === 200);
  const behindBestEffort = refusedReasoning.filter((r) =>
    servedBestEffort.some((b) => b.sentMs < r.endMs && b.startMs > r.endMs),
  );
  const slacks = await Promise.all(behindBestEffort.map((r) => slackAtRefusal(gw.url, r.id)));
  const inversions = behindBestEffort.filter((_, i) => (slacks[i] ?? 0) >= 0);
  t.diagnostic(
    `reasoning refused: ${refusedReasoning.length}; behind waiting best effort: ` +
      `${behindBestEffort.length}, of them predicted misses: ${behindBestEffort.length - inversions.length}`,
  );
  assert.equal(
    inversions.length,
    0,
    `${inversions.length} reasoning refusals behind waiting best effort`,
  );
  assert.ok(of('interactive').some((s) => s.status === 200));
  assert.ok(servedBestEffort.length > 0, 'best effort is served once capacity is left over');
  for (const s of sent) assert.ok([200, 503].includes(s.status), `status ${s.status}`);
  assert.equal(await metricValue(gw.url, 'goodput_priority_inversions_total'), 0);
});
