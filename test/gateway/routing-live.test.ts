// Prefix-aware routing, live and simulated: `goodput serve` with two `goodput engine` backends
// and multi-turn chats through the openai client (each conversation resending its history, a
// session header on every turn, two system prompts shared across conversations). The engines'
// own prefix-cache counters give the live hit rate; the requests actually sent, replayed as a
// native trace (the same chained block hashes the gateway computed) through the simulator with
// the same engines and policy, give the simulated one. They agree within 10 points, and the
// prefix-aware router beats round-robin live.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { promptBlockHashes, renderChatPrompt, estimateChatTokens } from '../../src/openai/index.ts';
import type { ChatMessage } from '../../src/openai/chat-request.ts';
import { runScenario, SCENARIO_DEFAULTS } from '../../src/sim/scenario.ts';
import { loadPolicy } from '../../src/sim/policy-source.ts';
import { startEngine, startServe, until } from './process-kit.ts';
import { tempDir } from '../temp-dir.ts';

const PROFILE = 'const:step_ms=2';
const SESSIONS = 8;
const TURNS = 5;
const dir = tempDir('routing-live');

const systemPrompt = (k: number) =>
  `You are assistant ${k}. ` + `Answer carefully, cite the handbook section ${k}. `.repeat(10);
// Each turn pastes a document excerpt: the history a conversation resends grows fast.
const userTurn = (s: number, t: number) =>
  `Session ${s}, excerpt ${t}: ` +
  `clause ${s * 10 + t} of the contract reads as follows. `.repeat(60);

interface Sent {
  readonly atMs: number;
  readonly session: string;
  readonly messages: ChatMessage[];
  readonly outputTokens: number;
}

async function engineHits(url: string): Promise<{ queries: number; hits: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string) =>
    Number(
      text
        .split('\n')
        .find((l) => l.startsWith(name))
        ?.split(' ')[1] ?? 0,
    );
  return {
    queries: value('vllm:prefix_cache_queries_total'),
    hits: value('vllm:prefix_cache_hits_total'),
  };
}

async function liveRun(routing: string, sessions: boolean) {
  const policyFile = join(dir, `${routing}.yaml`);
  const session = sessions ? ', session: { mode: soft }' : '';
  writeFileSync(
    policyFile,
    `name: ${routing}\npolicy_revision: ${routing}@1\nadmission: { type: admit-all }\nrouting: { type: ${routing}${session} }\n`,
  );
  const backends = [
    await startEngine(['--profile', PROFILE, '--seed', '1']),
    await startEngine(['--profile', PROFILE, '--seed', '2']),
  ];
  const { url, proc } = await startServe([
    '--policy',
    policyFile,
    '--profile',
    PROFILE,
    ...backends.flatMap((b) => ['--backend', b]),
  ]);
  // Both backends scraped and ready before the first conversation starts.
  await until('both backends ready', async () => {
    const text = await (await fetch(`${url}/metrics`)).text();
    return text.split('\n').filter((l) => /^goodput_backend_ready\{.*\} 1$/.test(l)).length === 2;
  });
  // A client retries a shed request after its Retry-After, as the SDK does: a gateway just
  // started on two cores busy with other tests may shed the first few (lag-shedder.ts), and a
  // shed request is refused before it is routed, so it changes no hit.
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 3 });
  const start = performance.now();
  const sent: Sent[] = [];
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      const session = `chat-${s}`;
      const messages: ChatCompletionMessageParam[] = [
        { role: 'system', content: systemPrompt(s % 2) },
      ];
      for (let t = 0; t < TURNS; t++) {
        messages.push({ role: 'user', content: userTurn(s, t) });
        const atMs = performance.now() - start;
        const reply = await client.chat.completions
          .create(
            { model: 'llama-3-8b', messages, max_tokens: 24 },
            { headers: { 'x-session-id': session } },
          )
          .catch((e: Error) => {
            throw new Error(`${e.message}\n${proc.output().slice(-3000)}`);
          });
        const text = reply.choices[0].message.content ?? '';
        sent.push({
          atMs,
          session,
          messages: messages.map((m) => ({ ...m }) as ChatMessage),
          outputTokens: reply.usage?.completion_tokens ?? 24,
        });
        messages.push({ role: 'assistant', content: text });
      }
    }),
  );
  let queries = 0;
  let hits = 0;
  for (const b of backends) {
    const h = await engineHits(b);
    queries += h.queries;
    hits += h.hits;
  }
  return { rate: hits / queries, sent, policyFile };
}

/** The same requests through the simulator: two replicas of the same engine, the same policy. */
function simulatedRate(sent: readonly Sent[], policyFile: string): number {
  const trace = join(dir, `${policyFile.split('/').pop()}.jsonl`);
  const rows = [...sent]
    .sort((a, b) => a.atMs - b.atMs)
    .map((r) => {
      const tokens = estimateChatTokens(r);
      const prefix = promptBlockHashes(renderChatPrompt(r), tokens, 16);
      return JSON.stringify({
        t_ms: Math.round(r.atMs),
        input_tokens: tokens,
        output_tokens: r.outputTokens,
        session: r.session,
        prefix_hashes: prefix.hashes,
      });
    });
  writeFileSync(trace, `${rows.join('\n')}\n`);
  const report = runScenario(
    { ...SCENARIO_DEFAULTS, seed: 1, trace, replicas: 2, profile: PROFILE },
    loadPolicy(policyFile),
    { wallClock: { now: () => 0 } },
  );
  return report.routing.prefix_hit_rate;
}

test('multi-turn chats: the live prefix hit rate is within 10 points of the simulator’s, and beats round-robin', async (t) => {
  const aware = await liveRun('expected-completion', true);
  const blind = await liveRun('round-robin', false);
  const simAware = simulatedRate(aware.sent, aware.policyFile);
  const simBlind = simulatedRate(blind.sent, blind.policyFile);
  const report = `live ${aware.rate.toFixed(3)} / sim ${simAware.toFixed(3)}; round-robin live ${blind.rate.toFixed(3)} / sim ${simBlind.toFixed(3)}`;
  t.diagnostic(report);
  assert.equal(aware.sent.length, SESSIONS * TURNS);
  assert.ok(Math.abs(aware.rate - simAware) <= 0.1, report);
  assert.ok(Math.abs(blind.rate - simBlind) <= 0.1, report);
  assert.ok(aware.rate > blind.rate, report);
});
