// What the `openai` client's own retries do to an overloaded gateway: `goodput serve` on its
// embedded fleet, and a burst of `--requests` chats at once from clients with the SDK's default
// of two retries (each after the Retry-After it is told). Reports what the clients got, and from
// the gateway's /metrics what it was offered, how many attempts it saw as retries, and how it
// refused them. `--root DIR` runs another checkout's gateway, to compare two versions.
// Usage: node bench/sdk-retries.ts [--requests 600] [--max-tokens 128] [--root DIR]
import OpenAI from 'openai';
import { REPO_ROOT, flag } from './bench-args.ts';
import { metric, startGoodput } from './live-processes.ts';

const REQUESTS = Number(flag('--requests') ?? 600);
const MAX_TOKENS = Number(flag('--max-tokens') ?? 128);
const root = flag('--root') ?? REPO_ROOT;

const { url, child } = await startGoodput(['serve'], root);
try {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 2 });
  const outcomes = new Map<string, number>();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: REQUESTS }, async (_, i) => {
      let outcome: string;
      try {
        await client.chat.completions.create({
          model: 'llama-3-8b',
          messages: [{ role: 'user', content: `Tell me story number ${i}.` }],
          max_tokens: MAX_TOKENS,
        });
        outcome = '200';
      } catch (e) {
        const reason = (e as { headers?: Headers }).headers?.get('x-goodput-reason');
        outcome = `${(e as { status?: number }).status ?? 'error'} ${reason ?? ''}`.trim();
      }
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }),
  );
  const wallS = (performance.now() - started) / 1000;
  const text = await (await fetch(`${url}/metrics`)).text();
  const refusals = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^goodput_admission_decisions_total\{([^}]*)\} (\S+)$/.exec(line);
    if (m === null || !m[1].includes('outcome="reject"')) continue;
    const reason = /reason="([^"]+)"/.exec(m[1])?.[1] ?? '?';
    refusals.set(reason, (refusals.get(reason) ?? 0) + Number(m[2]));
  }
  const shared = metric(text, 'goodput_shared_refusals_total');
  console.log(`checkout: ${root}; ${REQUESTS} chats at once, max_tokens ${MAX_TOKENS}`);
  console.log(`clients' final outcomes: ${JSON.stringify(Object.fromEntries(outcomes))}`);
  console.log(`last client done after ${wallS.toFixed(1)} s`);
  console.log(
    `gateway: offered ${metric(text, 'goodput_offered_requests_total')}, retries ${metric(text, 'goodput_retries_total')}, refused at the door ${shared}`,
  );
  console.log(`admission's refusals by reason: ${JSON.stringify(Object.fromEntries(refusals))}`);
} finally {
  child.kill('SIGTERM');
}
