// What a streamed token costs the gateway to write, by the API its client called: a chat
// completion's chunk rebuilt from the token (what the embedded fleet's tokens and a backend's
// unlearnt chunks take; a learnt one goes as its bytes came), and a Responses API event
// (`response.output_text.delta`, always built). Each is the gateway's own form
// (src/gateway/http/answers.ts, responses-answer.ts), timed over a reply of `--tokens` tokens,
// the fastest of `--rounds`. One event loop writes every stream's tokens, so what one costs here
// every stream on the gateway waits.
// Usage: node bench/answer-render.ts [--tokens 100000] [--rounds 5]
import { cpus } from 'node:os';
import { flag } from './bench-args.ts';
import { completionForm, type StreamForm } from '../src/gateway/http/answers.ts';
import { responsesForm } from '../src/gateway/http/responses-answer.ts';
import { ResponseBuilder, parseResponsesRequest } from '../src/openai/index.ts';

const TOKENS = Number(flag('--tokens') ?? 100_000);
const ROUNDS = Number(flag('--rounds') ?? 5);
const HEAD = {
  id: 'chatcmpl-3f2a9c1e-5b7d-4e0a-9c3b-1d2e3f4a5b6c',
  created: 1_796_000_000,
  model: 'llama-3-8b',
};
const WORDS = [' the', ' quick', ' model', ' serves', ' tokens', ' within', ' its', ' deadline'];

const forms: [name: string, make: () => StreamForm][] = [
  ['chat chunk', () => completionForm('chat', HEAD, false, undefined)],
  ['chat chunk, usage asked', () => completionForm('chat', HEAD, true, undefined)],
  [
    'Responses event',
    () => {
      const request = parseResponsesRequest({ model: HEAD.model, input: 'hi', stream: true });
      const head = {
        id: '3f2a9c1e-5b7d-4e0a-9c3b-1d2e3f4a5b6c',
        createdAt: HEAD.created,
        model: HEAD.model,
        request,
      };
      return responsesForm(new ResponseBuilder(head, true), undefined);
    },
  ],
];

/** ns a token, the fastest of ROUNDS replies, and the bytes a token took. */
function time(make: () => StreamForm): { ns: number; bytes: number } {
  let best = Infinity;
  let bytes = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const form = make();
    form.opening();
    let written = 0;
    const t = performance.now();
    for (let i = 0; i < TOKENS; i++) {
      const out = form.token({ text: WORDS[i % WORDS.length] });
      written += out.length;
    }
    best = Math.min(best, ((performance.now() - t) * 1e6) / TOKENS);
    bytes = written / TOKENS;
  }
  return { ns: best, bytes };
}

console.log(`machine: ${cpus()[0]?.model} × ${cpus().length}, node ${process.version}`);
console.log(`${TOKENS.toLocaleString('en')} tokens a reply, fastest of ${ROUNDS}\n`);
console.log('| form | ns a token | bytes a token |');
console.log('| --- | ---: | ---: |');
for (const [name, make] of forms) {
  const { ns, bytes } = time(make);
  console.log(`| ${name} | ${ns.toFixed(0)} | ${bytes.toFixed(0)} |`);
}
