// How long a request body's schema takes to accept or refuse, for bodies of large arrays (a
// prompt of a million token ids, a million strings, chat content or `stop` of a million
// elements), in this tree and, side by side, in another checkout. One event loop checks every
// body, so what one body costs here, every stream on the gateway or engine waits.
// Usage: node bench/request-parse.ts [--base DIR] [--rounds N]
//   (DIR: a checkout with its own src/, e.g. `git worktree add /tmp/base <commit>`)
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { REPO_ROOT, flag } from './bench-args.ts';

const baseDir = flag('--base');
const rounds = Number(flag('--rounds') ?? 3);

type Parse = (body: unknown) => unknown;

async function parsers(dir: string): Promise<{ completion: Parse; chat: Parse }> {
  const completion = await import(resolve(dir, 'src/openai/completion-request.ts'));
  const chat = await import(resolve(dir, 'src/openai/chat-request.ts'));
  return { completion: completion.parseCompletionRequest, chat: chat.parseChatCompletionRequest };
}

const M = 1_000_000;
const ids = Array.from({ length: M }, (_, i) => i % 1000);
const strings = Array.from({ length: M }, () => 'a');
const user = [{ role: 'user', content: 'x' }];
const CASES: readonly [name: string, api: 'completion' | 'chat', body: unknown][] = [
  ['prompt: 1M token ids', 'completion', { model: 'm', prompt: ids }],
  ['prompt: 1M token ids, the last bad', 'completion', { model: 'm', prompt: [...ids, 'x'] }],
  ['prompt: 1M strings', 'completion', { model: 'm', prompt: strings }],
  ['prompt: 1M strings, the last bad', 'completion', { model: 'm', prompt: [...strings, 1] }],
  ['content: 1M numbers', 'chat', { model: 'm', messages: [{ role: 'user', content: ids }] }],
  ['stop: 1M numbers', 'chat', { model: 'm', messages: user, stop: ids }],
  ['stop: 1M strings', 'chat', { model: 'm', messages: user, stop: strings }],
];

/** The fastest of `rounds` runs, in ms, and whether the body was accepted. */
function time(parse: Parse, body: unknown): { ms: number; ok: boolean } {
  let best = Infinity;
  let ok = true;
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    try {
      parse(body);
      ok = true;
    } catch {
      ok = false;
    }
    best = Math.min(best, performance.now() - t);
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
for (const [name, api, body] of CASES) {
  const runs = trees.map(([, p]) => time(p[api], body));
  const cells = runs.map((r) => `${r.ms.toFixed(0)} ms`).join(' | ');
  console.log(`| ${name} | ${cells} | ${runs.at(-1)?.ok ? 'accepted' : 'refused'} |`);
}
