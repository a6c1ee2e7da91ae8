// Kept turns, live: under a standing overload, a client that sends an Idempotency-Key and comes
// back when its refusal's Retry-After says finds its turn kept and is admitted, where without
// kept turns it competes again with every new arrival. Real HTTP, real engines, the decision log
// and /metrics counting what the clients saw.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  engines,
  gateway,
  metricValue,
  policyWith,
  postChat,
  decisionRecord,
} from './gateway-kit.ts';
import { sha256 } from '../../src/gateway/api-keys.ts';

const slow = { profile: 'const:step_ms=10', maxNumSeqs: 4 };
const ADMIN = 'admin-secret';

interface Run {
  /** Keyed requests refused for their wait, and whether each was told its turn is kept. */
  readonly refused: {
    readonly id: string;
    readonly kept: boolean;
    readonly retry: number;
    /** The retry's refusal reason (`x-goodput-reason`), when it was refused. */
    readonly retryReason: string | null;
    /** The retry was refused again, and told its (new) turn is kept. */
    readonly keptAgain: boolean;
  }[];
  readonly gw: Awaited<ReturnType<typeof gateway>>;
}

/** A tenant that earns no retries: only the budget's floor, 1 a second, lets retries by. */
const NO_RETRIES = 'sk-no-retries';

/**
 * Three times what two slow engines serve, for 5 s, of requests without a key; meanwhile 40
 * keyed clients, one every 100 ms, each retrying once, exactly when its refusal says. With
 * `noRetries`, every request is of a tenant whose retry budget earns nothing.
 */
async function overload(keepTurns: boolean, noRetries = false): Promise<Run> {
  const backends = await engines(2, slow);
  const policy = policyWith({
    admission: { type: 'goodput', retry_after: { keep_turns: keepTurns } },
    ...(noRetries
      ? {
          tenants: {
            frugal: {
              api_keys_sha256: [sha256(NO_RETRIES).toString('hex')],
              retry_budget_ratio: 0,
            },
          },
        }
      : {}),
  });
  const auth: Record<string, string> = noRetries ? { authorization: `Bearer ${NO_RETRIES}` } : {};
  const gw = await gateway(backends, policy, { engine: slow, adminToken: ADMIN });
  const body = { max_tokens: 60, ignore_eos: true, stream: true };
  let flooding = true;
  const flood = (async () => {
    const sent: Promise<unknown>[] = [];
    while (flooding) {
      sent.push(
        postChat(gw.url, { ...body, messages: [{ role: 'user', content: 'fresh' }] }, auth).then(
          (r) => r.arrayBuffer(),
        ),
      );
      await sleep(25);
    }
    await Promise.all(sent);
  })();
  await sleep(1_000);
  const refused: Run['refused'] = [];
  const client = async (i: number) => {
    await sleep(i * 100);
    const key = `turn-${keepTurns}-${i}`;
    const fields = { ...body, messages: [{ role: 'user', content: `keyed ${i}` }] };
    const first = await postChat(gw.url, fields, { ...auth, 'idempotency-key': key });
    await first.arrayBuffer();
    if (first.status !== 503) return;
    const id = first.headers.get('x-request-id') ?? '';
    const kept = first.headers.get('x-goodput-turn') === 'kept';
    await sleep(Number(first.headers.get('retry-after-ms')));
    const retry = await postChat(gw.url, fields, {
      ...auth,
      'idempotency-key': key,
      'x-goodput-attempt': '2',
    });
    await retry.arrayBuffer();
    const keptAgain = retry.headers.get('x-goodput-turn') === 'kept';
    const retryReason = retry.headers.get('x-goodput-reason');
    refused.push({ id, kept, retry: retry.status, retryReason, keptAgain });
  };
  await Promise.all(Array.from({ length: 40 }, (_, i) => client(i)));
  flooding = false;
  await flood;
  return { refused, gw };
}

test('under a standing overload, a keyed request told its turn is kept is admitted when it comes back', async (t) => {
  const kept = await overload(true);
  const told = kept.refused.filter((r) => r.kept);
  assert.ok(told.length >= 5, `keyed requests refused with their turn kept: ${told.length}`);
  const admitted = told.filter((r) => r.retry === 200).length;
  const without = await overload(false);
  assert.ok(
    without.refused.every((r) => !r.kept),
    'no turn is kept when the policy keeps none',
  );
  const admittedWithout = without.refused.filter((r) => r.retry === 200).length;
  const share = (n: number, of: number) => n / Math.max(1, of);
  t.diagnostic(
    `retries admitted: ${admitted}/${told.length} at a kept turn, ` +
      `${admittedWithout}/${without.refused.length} without`,
  );
  assert.ok(
    share(admitted, told.length) > share(admittedWithout, without.refused.length),
    `retries admitted: ${admitted}/${told.length} at a kept turn, ` +
      `${admittedWithout}/${without.refused.length} without`,
  );
  // What the clients saw is what /metrics and the decision log say.
  const again = kept.refused.filter((r) => r.keptAgain).length;
  assert.equal(await metricValue(kept.gw.url, 'goodput_kept_turns_total'), told.length + again);
  const claimed = await metricValue(kept.gw.url, 'goodput_kept_turns_ended_total', {
    outcome: 'claimed',
  });
  assert.equal(claimed, told.length, 'every client came back for its turn');
  assert.equal(await metricValue(without.gw.url, 'goodput_kept_turns_total'), 0);
  const record = await decisionRecord<{
    admission: { kept_turn: boolean; retry_after_ms: number };
  }>(kept.gw.url, told[0].id, ADMIN);
  assert.equal(record.admission.kept_turn, true);
  assert.ok(record.admission.retry_after_ms > 0);
});

test("a retry at its kept turn was invited: its tenant's retry budget lets it by", async () => {
  const run = await overload(true, true);
  const atTurn = run.refused.filter((r) => r.kept);
  assert.ok(atTurn.length >= 5, `keyed requests refused with their turn kept: ${atTurn.length}`);
  const charged = atTurn.filter((r) => r.retryReason === 'retry_budget');
  assert.deepEqual(charged, [], 'no retry at a kept turn is refused for the retry budget');
  // The budget is there for retries nobody invited: 30 declared ones spend it.
  let last: Response | undefined;
  for (let i = 0; i < 30 && last?.status !== 429; i++) {
    last = await postChat(
      run.gw.url,
      { max_tokens: 1 },
      {
        authorization: `Bearer ${NO_RETRIES}`,
        'x-goodput-attempt': '2',
      },
    );
    await last.arrayBuffer();
  }
  assert.equal(last?.headers.get('x-goodput-reason'), 'retry_budget');
});
