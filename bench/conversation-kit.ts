// An agent's conversation as the Responses API carries it, for the benches that read one: each
// turn a user's message of 60 words, a reply's text, a tool call and the tool's output.

const WORDS = 'the backup job fails with slow down errors since the file count doubled '.split(' ');
export const words = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => WORDS[(i * 7 + seed) % WORDS.length]).join(' ');

/** One turn: what the user said, and the reply's items carried back as input. */
export function turn(t: number): object[] {
  return [
    { role: 'user', content: words(60, t) },
    {
      type: 'message',
      role: 'assistant',
      id: `msg_${t}`,
      status: 'completed',
      content: [{ type: 'output_text', text: words(40, t + 1), annotations: [] }],
    },
    {
      type: 'function_call',
      id: `fc_${t}`,
      call_id: `call_${t}`,
      name: 'read_log',
      arguments: JSON.stringify({ path: `/var/log/backup/${t}.log`, lines: 200 }),
    },
    { type: 'function_call_output', call_id: `call_${t}`, output: words(80, t + 2) },
  ];
}
