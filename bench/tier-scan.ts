// What it costs the door, under a standing overload, to learn whether a body may name a
// service tier before it refuses it unparsed (service-tier.ts `mayNameTier`), against the
// plain search it replaced (which missed an escaped key) and against parsing the body. Bodies
// of 10 KB, 200 KB and 2 MB: plain ASCII; with non-ASCII escaped as Python's json.dumps writes
// it (`\u00e9`); and the latter with its `service_tier` key escaped. Median µs a call of
// `--rounds`, each over enough calls to take about 50 ms.
// Usage: node bench/tier-scan.ts [--rounds 7]
import { cpus } from 'node:os';
import { flag } from './bench-args.ts';
import { mayNameTier } from '../src/gateway/http/service-tier.ts';

const ROUNDS = Number(flag('--rounds') ?? 7);

function body(chars: number, escaped: boolean, tier: 'none' | 'plain' | 'escaped'): string {
  const words = 'café naïve résumé déjà vu: the fleet serves tokens; ';
  const content = words.repeat(Math.ceil(chars / words.length)).slice(0, chars);
  let text = JSON.stringify({
    model: 'llama-3-8b',
    messages: [{ role: 'user', content }],
    ...(tier === 'none' ? {} : { service_tier: 'flex' }),
  });
  if (escaped)
    text = text.replace(
      /[^\x20-\x7e]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
  if (tier === 'escaped') text = text.replace('"service_tier"', '"service\\u005ftier"');
  return text;
}

function median(run: () => unknown): number {
  let calls = 1;
  for (let t = 0; t < 50; calls *= 2) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) run();
    t = performance.now() - start;
  }
  const times: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) run();
    times.push(((performance.now() - start) / calls) * 1000);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

console.log(`${cpus()[0]?.model ?? 'cpu'}; node ${process.version}; medians of ${ROUNDS} rounds`);
console.log(
  '| body | size | names a tier | mayNameTier, µs | plain search, µs | parse, µs | parse ÷ mayNameTier |',
);
console.log('| --- | ---: | --- | ---: | ---: | ---: | ---: |');
for (const chars of [10_000, 200_000, 2_000_000]) {
  const cases = [
    ['ASCII', body(chars, false, 'none')],
    ['escaped', body(chars, true, 'none')],
    ['escaped, key escaped', body(chars, true, 'escaped')],
  ] as const;
  for (const [kind, text] of cases) {
    const scan = median(() => mayNameTier(text));
    const plain = median(() => text.includes('"service_tier"'));
    const parse = median(() => JSON.parse(text));
    const kb = `${Math.round(Buffer.byteLength(text) / 1000)} KB`;
    console.log(
      `| ${kind} | ${kb} | ${mayNameTier(text) ? 'yes' : 'no'} | ${scan.toFixed(1)} | ` +
        `${plain.toFixed(1)} | ${parse.toFixed(0)} | ${(parse / scan).toFixed(0)}× |`,
    );
  }
}
