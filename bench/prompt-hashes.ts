// What hashing a prompt's blocks for prefix routing and caching costs, by prompt size, in this
// tree and, side by side, in another checkout. The gateway hashes every request it reads (a
// refused one too: admission asks the router what cache hit the prompt would get), and each
// embedded engine hashes what it is sent, all on one event loop.
// Usage: node bench/prompt-hashes.ts [--base DIR] [--rounds N]
//   (DIR: a checkout with its own src/, e.g. `git worktree add /tmp/base <commit>`)
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { REPO_ROOT, flag } from './bench-args.ts';

const baseDir = flag('--base');
const rounds = Number(flag('--rounds') ?? 5);

type Messages = { role: string; content: string }[];
interface Hashing {
  chat(messages: Messages, tokens: number): unknown;
  ids(prompt: number[], tokens: number): unknown;
  estimate(messages: Messages): number;
}

/** A tree's hashing of a chat and a token prompt, as its gateway does it (block size 16). */
async function hashing(dir: string): Promise<Hashing> {
  const o = await import(resolve(dir, 'src/openai/index.ts'));
  // A checkout from before the streamed hashes renders the prompt, then hashes the text; one
  // from before tools takes a chat's messages alone (an object is not iterable there).
  const ofTools = (() => {
    try {
      o.estimateChatTokens({ messages: [] });
      return true;
    } catch {
      return false;
    }
  })();
  const prompt = (m: Messages) => (ofTools ? { messages: m } : m);
  return {
    chat: (m, t) =>
      o.chatBlockHashes?.(prompt(m), t, 16) ??
      o.promptBlockHashes(o.renderChatPrompt(prompt(m)), t, 16),
    ids: (p, t) =>
      o.completionBlockHashes?.(p, t, 16) ??
      o.promptBlockHashes(o.renderCompletionPrompt(p), t, 16),
    estimate: (m) => o.estimateChatTokens(prompt(m)),
  };
}

const system = 'You are a support engineer. Answer in short paragraphs and cite the log line. ';
const question = 'Our nightly backup fails with SlowDown errors since the file count doubled. ';
/** A system and a user message of about `kb` KiB in all. */
const chat = (kb: number): Messages => [
  { role: 'system', content: system.repeat(4) },
  { role: 'user', content: question.repeat(Math.max(1, Math.round((kb * 1024 - 320) / 76))) },
];
const questionZh = '我们的夜间备份自从文件数量翻倍以后就一直因为降速错误而失败。';
/** The same in Chinese: a user message of about `kb` KiB of UTF-8, 3 bytes a character. */
const chatZh = (kb: number): Messages => [
  { role: 'system', content: system.repeat(4) },
  { role: 'user', content: questionZh.repeat(Math.max(1, Math.round((kb * 1024) / 3 / 30))) },
];
const ids = (n: number) => Array.from({ length: n }, (_, i) => (i * 7_919) % 128_256);
/** A chat prompt hashed at its estimated size (the estimate made once, outside the timing). */
const chatCase =
  (kb: number, of = chat) =>
  (h: Hashing) => {
    const m = of(kb);
    const tokens = h.estimate(m);
    return () => h.chat(m, tokens);
  };
/** A chat prompt's estimated size, what every request's admission begins with. */
const estimateCase =
  (kb: number, of = chat) =>
  (h: Hashing) => {
    const m = of(kb);
    return () => h.estimate(m);
  };
const idsCase = (n: number) => (h: Hashing) => {
  const p = ids(n);
  return () => h.ids(p, n);
};
const CASES: readonly [name: string, run: (h: Hashing) => () => unknown, per: number][] = [
  ['chat, 1 KiB', chatCase(1), 20_000],
  ['chat, 32 KiB', chatCase(32), 1_000],
  ['chat, 400 KiB', chatCase(400), 50],
  ['chat in Chinese, 32 KiB', chatCase(32, chatZh), 1_000],
  ['estimate, chat 32 KiB', estimateCase(32), 1_000],
  ['estimate, chat in Chinese 32 KiB', estimateCase(32, chatZh), 1_000],
  ['8,192 token ids', idsCase(8_192), 1_000],
  ['100,000 token ids', idsCase(100_000), 50],
];

/** The fastest of `rounds` runs of `per` calls, in µs per call (after one warm-up run). */
function time(f: () => unknown, per: number): number {
  let best = Infinity;
  for (let r = 0; r <= rounds; r++) {
    const t = performance.now();
    for (let i = 0; i < per; i++) f();
    if (r > 0) best = Math.min(best, ((performance.now() - t) * 1000) / per);
  }
  return best;
}

const trees = [
  ...(baseDir === undefined ? [] : [['base', await hashing(baseDir)] as const]),
  ['this tree', await hashing(REPO_ROOT)] as const,
];
console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
console.log(`fastest of ${rounds} rounds${baseDir === undefined ? '' : `; base: ${baseDir}`}\n`);
const ratio = trees.length > 1 ? ' base ÷ this |' : '';
console.log(`| prompt | ${trees.map(([name]) => name).join(' | ')} |${ratio}`);
console.log(`| --- | ${trees.map(() => '---:').join(' | ')} |${ratio === '' ? '' : ' ---: |'}`);
for (const [name, run, per] of CASES) {
  const us = trees.map(([, h]) => time(run(h), per));
  const cells = us.map((u) => `${u < 10 ? u.toFixed(1) : u.toFixed(0)} µs`).join(' | ');
  const r = us.length > 1 ? ` ${(us[0] / (us.at(-1) as number)).toFixed(2)}× |` : '';
  console.log(`| ${name} | ${cells} |${r}`);
}
