// How long a request body's schema takes to accept or refuse, for bodies of large arrays (a
// prompt of a million token ids, a million strings, chat content or `stop` of a million
// elements) and for the bodies clients send every second (a chat of two messages with vLLM's
// extras; an agent's turn with 20 tools, its call and the tool's answer; each timed over
// 10,000 parses; the same two as Responses API requests, parsed and made into the chat they are,
// as the gateway takes them), in this tree and, side by side, in another checkout. One event loop checks every
// body, so what one body costs here, every stream on the gateway or engine waits.
// Usage: node bench/request-parse.ts [--base DIR] [--rounds N]
//   (DIR: a checkout with its own src/, e.g. `git worktree add /tmp/base <commit>`)
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { REPO_ROOT, flag } from './bench-args.ts';

const baseDir = flag('--base');
const rounds = Number(flag('--rounds') ?? 3);

type Parse = (body: unknown) => unknown;
type Api = 'completion' | 'chat' | 'responses';

async function parsers(dir: string): Promise<Record<Api, Parse | undefined>> {
  const completion = await import(resolve(dir, 'src/openai/completion-request.ts'));
  const chat = await import(resolve(dir, 'src/openai/chat-request.ts'));
  // A tree from before the Responses API has none.
  const responses = await import(resolve(dir, 'src/openai/responses-request.ts')).catch(
    () => undefined,
  );
  return {
    completion: completion.parseCompletionRequest,
    chat: chat.parseChatCompletionRequest,
    responses:
      responses === undefined
        ? undefined
        : (body) => responses.asChatRequest(responses.parseResponsesRequest(body)),
  };
}

const M = 1_000_000;
const ids = Array.from({ length: M }, (_, i) => i % 1000);
const strings = Array.from({ length: M }, () => 'a');
const user = [{ role: 'user', content: 'x' }];
const system = 'You are a support engineer. Answer in short paragraphs and cite the log line. ';
const question = 'Our nightly backup fails with SlowDown errors since the file count doubled. ';
const chat = {
  model: 'm',
  messages: [
    { role: 'system', content: system.repeat(4) },
    { role: 'user', content: question.repeat(6) },
  ],
  max_tokens: 256,
  stream: true,
  stream_options: { include_usage: true },
  temperature: 0.7,
  top_p: 0.95,
  top_k: 40,
  stop_token_ids: [128001, 128009],
};
const tool = (i: number) => ({
  type: 'function',
  function: {
    name: `tool_${i}`,
    description: 'Looks a thing up in the inventory and says how many are left.',
    parameters: {
      type: 'object',
      properties: { sku: { type: 'string' }, warehouse: { type: 'string', enum: ['a', 'b'] } },
      required: ['sku'],
    },
  },
});
const call = {
  id: 'call-1',
  type: 'function',
  function: { name: 'tool_3', arguments: '{"sku":"x"}' },
};
const agent = {
  ...chat,
  messages: [
    ...chat.messages,
    { role: 'assistant', content: null, tool_calls: [call] },
    { role: 'tool', content: '{"left": 4}', tool_call_id: 'call-1' },
  ],
  tools: Array.from({ length: 20 }, (_, i) => tool(i)),
  tool_choice: 'auto',
};
/** The agent's turn as the Responses API sends it: flat tools, the call and its output as items. */
const { messages, tools, max_tokens, stream, temperature, top_p } = agent;
const agentResponses = {
  model: 'm',
  instructions: messages[0].content,
  input: [
    messages[1],
    { type: 'function_call', call_id: 'call-1', name: 'tool_3', arguments: '{"sku":"x"}' },
    { type: 'function_call_output', call_id: 'call-1', output: '{"left": 4}' },
  ],
  tools: tools.map((t) => ({ type: 'function', ...t.function })),
  tool_choice: 'auto',
  max_output_tokens: max_tokens,
  stream,
  temperature,
  top_p,
};
const parts = Array.from({ length: 50 }, () => ({ type: 'text', text: 'x' }));
const longChat = {
  model: 'm',
  messages: Array.from({ length: 2_047 }, () => ({ role: 'user', content: parts })),
};
const longInput = {
  model: 'm',
  input: Array.from({ length: 2_047 }, () => ({
    role: 'user',
    content: parts.map((p) => ({ ...p, type: 'input_text' })),
  })),
};
/** Parses per timing of a small body: one takes microseconds. */
const SMALL = 10_000;
const CASES: readonly [name: string, api: Api, body: unknown, reps?: number][] = [
  ['a chat: 2 messages, vLLM extras', 'chat', chat, SMALL],
  ["an agent's turn: 20 tools, a call, its answer", 'chat', agent, SMALL],
  ["the agent's turn, as a Responses request", 'responses', agentResponses, SMALL],
  ['2,047 messages of 50 text parts', 'chat', longChat],
  ['2,047 input items of 50 text parts, as a Responses request', 'responses', longInput],
  ['prompt: 1M token ids', 'completion', { model: 'm', prompt: ids }],
  ['prompt: 1M token ids, the last bad', 'completion', { model: 'm', prompt: [...ids, 'x'] }],
  ['prompt: 1M strings', 'completion', { model: 'm', prompt: strings }],
  ['prompt: 1M strings, the last bad', 'completion', { model: 'm', prompt: [...strings, 1] }],
  ['content: 1M numbers', 'chat', { model: 'm', messages: [{ role: 'user', content: ids }] }],
  ['stop: 1M numbers', 'chat', { model: 'm', messages: user, stop: ids }],
  ['stop: 1M strings', 'chat', { model: 'm', messages: user, stop: strings }],
];

/** The fastest of `rounds` runs of `reps` parses, in ms a parse, and whether it was accepted. */
function time(parse: Parse | undefined, body: unknown, reps = 1): { ms: number; ok: boolean } {
  if (parse === undefined) return { ms: NaN, ok: false };
  let best = Infinity;
  let ok = true;
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    for (let i = 0; i < reps; i++) {
      try {
        parse(body);
        ok = true;
      } catch {
        ok = false;
      }
    }
    best = Math.min(best, (performance.now() - t) / reps);
  }
  return { ms: best, ok };
}

const trees = [
  ...(baseDir === undefined ? [] : [['base', await parsers(baseDir)] as const]),
  ['this tree', await parsers(REPO_ROOT)] as const,
];
console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
console.log(`fastest of ${rounds} rounds${baseDir === undefined ? '' : `; base: ${baseDir}`}\n`);
console.log(`| body | ${trees.map(([name]) => name).join(' | ')} | verdict |`);
console.log(`| --- | ${trees.map(() => '---:').join(' | ')} | --- |`);
for (const [name, api, body, reps] of CASES) {
  const runs = trees.map(([, p]) => time(p[api], body, reps));
  const shown = (r: { ms: number; ok: boolean }) =>
    Number.isNaN(r.ms)
      ? '—'
      : `${reps === undefined ? `${r.ms.toFixed(0)} ms` : `${(r.ms * 1000).toFixed(1)} µs`}${r.ok ? '' : ' (refused)'}`;
  const cells = runs.map(shown).join(' | ');
  console.log(`| ${name} | ${cells} | ${runs.at(-1)?.ok ? 'accepted' : 'refused'} |`);
}
