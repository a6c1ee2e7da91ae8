/**
 * The simulated model's output text: one filler word per token, chosen by the token's index,
 * so a response's text is a pure function of its length. Each piece after the first starts
 * with a space, as a tokenizer's word pieces do, so joined pieces read as a sentence.
 */
const WORDS = [
  'the',
  'quick',
  'model',
  'serves',
  'tokens',
  'under',
  'its',
  'latency',
  'objectives',
  'while',
  'batching',
  'requests',
  'fairly',
  'and',
  'caching',
  'prefixes',
] as const;

export function fillerPiece(index: number): string {
  const word = WORDS[index % WORDS.length];
  return index === 0 ? word : ` ${word}`;
}
