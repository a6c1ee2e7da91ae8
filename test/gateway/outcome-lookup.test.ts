// A client that leaves mid-stream, against a real `goodput serve` process: its request's end is
// still recorded — the decision lookup gives the decision with an outcome that says it was
// cancelled, not completed, after the tokens it had — and the decision log has the same outcome
// line under its id. The gateway serves on.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { postChat } from './gateway-kit.ts';
import { startServe, until } from './process-kit.ts';

const ADMIN = 'admin-secret';
const dir = mkdtempSync(join(tmpdir(), 'goodput-outcomes-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'decisions.jsonl');
const gw = await startServe([
  '--decisions',
  file,
  '--admin-token',
  ADMIN,
  '--profile',
  'const:step_ms=5',
]);
after(async () => {
  gw.proc.child.kill('SIGTERM');
  await gw.proc.exited;
});

interface Looked {
  readonly admission: { readonly result: string };
  readonly outcome?: {
    readonly state: string;
    readonly output_tokens: number;
    readonly good: boolean;
    readonly missed: string | null;
  };
}

test('a client gone mid-stream: its outcome says cancelled, in the lookup and the log', async () => {
  const leaving = new AbortController();
  const res = await postChat(
    gw.url,
    { max_tokens: 2_000, ignore_eos: true, stream: true },
    {},
    leaving.signal,
  );
  assert.equal(res.status, 200);
  const id = res.headers.get('x-goodput-request-id') ?? '';
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  let text = '';
  while ((text.match(/"content":"[^"]/g) ?? []).length < 5) {
    const { value } = await reader.read();
    text += new TextDecoder().decode(value);
  }
  leaving.abort();

  const lookup = async (): Promise<Looked> => {
    const r = await fetch(`${gw.url}/admin/decisions/${id}`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    return (await r.json()) as Looked;
  };
  await until('its outcome recorded', async () => (await lookup()).outcome !== undefined);
  const looked = await lookup();
  assert.equal(looked.admission.result, 'admit');
  const ended = looked.outcome;
  assert.deepEqual(
    [ended?.state, ended?.good, ended?.missed],
    ['cancelled', false, 'not_completed'],
  );
  const tokens = ended?.output_tokens ?? 0;
  assert.ok(tokens >= 5 && tokens < 2_000, `${tokens} tokens before it left`);

  // The log's line is written without blocking requests: it reaches the file within its flush.
  const logged = () =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { msg: string; request_id: string; outcome?: unknown })
      .find((r) => r.msg === 'outcome' && r.request_id === id);
  await until('its outcome line in the log', () => logged() !== undefined);
  // The lookup adds the time it ended to the record's outcome.
  const { at_ms: _, ...fromLookup } = looked.outcome as Record<string, unknown>;
  assert.deepEqual(logged()?.outcome, fromLookup);

  // The gateway serves on.
  const next = await postChat(gw.url, { max_tokens: 3 });
  assert.equal(next.status, 200);
});
