// The burst the pools' end-to-end tests send: 240 streamed text completions of 200 tokens over
// 2.4 s through the real `openai` client — far more than one engine's capacity at SLO — and how
// each ended: its finish reason, or the status it was refused with. Every one must end whole or
// be refused at the door (429/503, admission's answer), never cut.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { tempDir } from '../temp-dir.ts';

export async function burstEndsWhole(url: string): Promise<void> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
  const endings = await Promise.all(
    Array.from({ length: 240 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * 10));
      try {
        const stream = await client.completions.create({
          model: 'llama-3-8b',
          prompt: 'tell me a story '.repeat(200),
          max_tokens: 200,
          stream: true,
        });
        let finish: string | null = null;
        for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
        return finish ?? 'no finish';
      } catch (e) {
        return `refused ${(e as { status?: number }).status ?? (e as Error).message}`;
      }
    }),
  );
  const counts: Record<string, number> = {};
  for (const e of endings) counts[e] = (counts[e] ?? 0) + 1;
  const whole = (counts.length ?? 0) + (counts.stop ?? 0);
  const refused = Object.entries(counts)
    .filter(([k]) => k.startsWith('refused 429') || k.startsWith('refused 503'))
    .reduce((n, [, v]) => n + v, 0);
  assert.equal(whole + refused, endings.length, JSON.stringify(counts));
  assert.ok(whole > 0, JSON.stringify(counts));
}

/**
 * A gauge or counter's value in the exposition at `url`, for exactly these labels ('': a metric
 * without any); NaN if none.
 */
export async function metricAt(url: string, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const series = labels === '' ? `${name} ` : `${name}{${labels}}`;
  const line = text.split('\n').find((l) => l.startsWith(series));
  return line === undefined ? NaN : Number(line.split(' ').at(-1));
}

/**
 * `serve` flags for a pool test: the goodput preset without its gap guard or its lag shedding
 * (the engines the pool starts share the gateway's two cores, and their start-up — and another
 * test file beside it — makes its loop late, so either would shed the burst meant to make the
 * pool scale out; engines on machines of their own take no CPU from it), one to three groups,
 * and a short scale-in window.
 */
export function poolServeArgs(): string[] {
  const policy = join(tempDir('pool'), 'policy.yaml');
  writeFileSync(
    policy,
    [
      'name: goodput',
      'policy_revision: goodput-pool-test',
      'admission: { type: goodput }',
      'dispatch: { type: flow-control }',
      'routing: { type: expected-completion }',
      'resilience: { shed_gap_ratio: 0, shed_lag_ms: 0 }',
      '',
    ].join('\n'),
  );
  return [
    '--policy',
    policy,
    '--min-replicas',
    '1',
    '--max-replicas',
    '3',
    '--ready-time',
    '1-2',
    '--scale-in-window',
    '3',
  ];
}
