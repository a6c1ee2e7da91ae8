// The gateway's prompt-size estimate (src/openai/text-weight.ts) against Llama 3's tokenizer, on
// texts in several languages and forms (bench/prompt-samples.ts): each text's tokens as Llama 3
// counts them over the estimate, by the rule of 4 characters a token and by script. Above 1 the
// estimate is short, and admission plans the prompt's KV and prefill as less than it is. Usage:
//   node bench/prompt-estimate.ts
import llama3 from 'llama3-tokenizer-js';
import { estimateTextTokens } from '../src/openai/prompt-tokens.ts';
import { PROMPT_SAMPLES } from './prompt-samples.ts';

console.log(
  '| text | characters | Llama 3 tokens | 4 a character: estimate | counted ÷ estimate | by script: estimate | counted ÷ estimate |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const [name, text] of Object.entries(PROMPT_SAMPLES)) {
  const counted = llama3.encode(text, { bos: false, eos: false }).length;
  const chars = [...text].length;
  const flat = Math.ceil(chars / 4);
  const scripted = estimateTextTokens(text);
  const ratio = (est: number) => (counted / est).toFixed(2);
  console.log(
    `| ${name} | ${chars} | ${counted} | ${flat} | ${ratio(flat)} | ${scripted} | ${ratio(scripted)} |`,
  );
}
