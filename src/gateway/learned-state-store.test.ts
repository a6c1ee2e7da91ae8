import { test } from 'node:test';
import assert from 'node:assert/strict';
import { presetPolicy } from '../core/config/presets.ts';
import { Learned } from '../core/estimate/learned.ts';
import { learnedStateText } from '../core/estimate/learned-state.ts';
import { VirtualClock } from '../runtime/virtual-clock.ts';
import {
  LearnedPersistence,
  fileLearnedStore,
  type LearnedStateStore,
} from './learned-state-store.ts';
import { memoryOpsLog } from './ops-log.ts';
import { LearnedImageTokens } from './url-image-tokens.ts';
import { parseImageTokens } from '../openai/image-size.ts';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const INTERVAL_MS = 60_000;

/** A store in memory whose saves wait until released while `hold`, or fail while `failing`. */
class HeldStore implements LearnedStateStore {
  readonly where = 'memory';
  readonly saved: string[] = [];
  failing = false;
  /** Its reads fail (Redis down, a read error). */
  unreadable = false;
  hold = false;
  stored: string | undefined;
  private readonly waiting: (() => void)[] = [];

  async load(): Promise<string | undefined> {
    if (this.unreadable) throw new Error('no answer from Redis within 2000 ms');
    return this.stored;
  }

  async save(text: string): Promise<void> {
    if (this.hold) await new Promise<void>((ok) => this.waiting.push(ok));
    if (this.failing) throw new Error('disk full');
    this.saved.push(text);
  }

  async close(): Promise<void> {}

  release(): void {
    for (const ok of this.waiting.splice(0)) ok();
  }
}

/** Runs the clock to `untilMs` a second at a time, letting each save's turns settle between. */
async function runTo(clock: VirtualClock, untilMs: number): Promise<void> {
  for (let t = clock.now(); t <= untilMs; t += 1_000) {
    for (let i = 0; i < 10; i++) {
      clock.run(t);
      await new Promise((r) => setImmediate(r));
    }
  }
}

function persistence(
  store: LearnedStateStore,
  learned = new Learned(presetPolicy('goodput')),
  urlImages?: LearnedImageTokens,
  model?: string,
) {
  const clock = new VirtualClock();
  const log = memoryOpsLog();
  const results: boolean[] = [];
  const p = new LearnedPersistence(store, learned, {
    intervalMs: INTERVAL_MS,
    clock,
    timers: clock,
    epochMs: () => Date.parse('2026-12-04T12:00:00Z') + clock.now(),
    log,
    urlImages,
    model,
    onSave: (ok) => results.push(ok),
  });
  return { p, clock, log, results, learned };
}

test('saves every interval, the text the model gives; a failure is logged once, and so is the recovery', async () => {
  const store = new HeldStore();
  const saved = store.saved;
  const { p, clock, log, results, learned } = persistence(store);
  learned.outputs.observe('interactive', 'acme', 300);
  p.start();
  await runTo(clock, INTERVAL_MS);
  assert.equal(saved.length, 1);
  assert.equal(saved[0], learnedStateText(learned, Date.parse('2026-12-04T12:01:00Z')));
  store.failing = true;
  await runTo(clock, 3 * INTERVAL_MS);
  store.failing = false;
  await runTo(clock, 4 * INTERVAL_MS);
  assert.deepEqual(results, [true, false, false, true]);
  assert.deepEqual(
    log.lines.map((l) => `${l.level} ${l.msg}`),
    [
      'warn learned state could not be saved to memory: trying again every interval',
      'info learned state saved again',
    ],
  );
  await p.stop();
  assert.equal(saved.length, 3);
});

test('a stop while an interval save is under way saves once more and arms no further interval', async () => {
  const store = new HeldStore();
  const saved = store.saved;
  const { p, clock } = persistence(store);
  p.start();
  store.hold = true;
  await runTo(clock, INTERVAL_MS);
  const stopped = p.stop();
  store.hold = false;
  store.release();
  await stopped;
  await runTo(clock, 10 * INTERVAL_MS);
  assert.equal(saved.length, 2);
  assert.equal(clock.pending, 0);
});

test('a start restores what was saved, or starts cold saying why', async () => {
  const store = new HeldStore();
  const cold = persistence(store);
  await cold.p.restore();
  assert.match(cold.log.lines[0].msg, /^no learned state at memory yet: starting cold/);

  const taught = new Learned(presetPolicy('goodput'));
  for (let i = 0; i < 30; i++) taught.outputs.observe('interactive', 'acme', 100 + i);
  store.stored = learnedStateText(taught, Date.parse('2026-12-04T11:59:00Z'));
  const warm = persistence(store);
  await warm.p.restore();
  assert.deepEqual(warm.log.lines[0].fields.classes, { interactive: 30 });
  assert.equal(warm.log.lines[0].fields.age_s, 60);
  assert.equal(warm.learned.outputs.predict('interactive', 'acme').source, 'tenant');

  store.stored = '{"format":"goodput.learned-state","version":1}';
  const bad = persistence(store);
  await bad.p.restore();
  assert.match(bad.log.lines[0].msg, /is not valid \(saved_at: expected/);
  assert.equal(bad.learned.restored, undefined);
});

test('a state it could not read at start is not saved over: read again each interval, then kept up', async () => {
  const store = new HeldStore();
  const taught = new Learned(presetPolicy('goodput'));
  for (let i = 0; i < 30; i++) taught.outputs.observe('interactive', 'acme', 100 + i);
  const good = learnedStateText(taught, Date.parse('2026-12-04T11:59:00Z'));
  store.stored = good;
  store.unreadable = true;
  const { p, clock, log, learned } = persistence(store);
  await p.restore();
  assert.match(log.lines[0].msg, /could not be read: starting cold, and saving nothing over it/);
  p.start();
  await runTo(clock, 2 * INTERVAL_MS);
  assert.deepEqual(store.saved, [], 'nothing saved over what it could not read');
  assert.equal(log.lines.length, 1, 'said once');
  store.unreadable = false;
  await runTo(clock, 3 * INTERVAL_MS);
  assert.equal(learned.outputs.predict('interactive', 'acme').source, 'tenant', 'read at last');
  assert.equal(store.saved.length, 1, 'and saved from then on');
  await p.stop();
  // A stop while it is still unread saves nothing either.
  const down = new HeldStore();
  down.unreadable = true;
  const early = persistence(down);
  await early.p.restore();
  await early.p.stop();
  assert.deepEqual(down.saved, []);
});

test("a state learned serving another model is not taken up: its lengths are that model's", async () => {
  const store = new HeldStore();
  const taught = new Learned(presetPolicy('goodput'));
  for (let i = 0; i < 30; i++) taught.outputs.observe('interactive', 'acme', 100 + i);
  store.stored = learnedStateText(taught, Date.parse('2026-12-04T11:59:00Z'), {
    model: 'llama-3-70b',
  });
  const other = persistence(store, undefined, undefined, 'llama-3-8b');
  await other.p.restore();
  assert.match(
    other.log.lines[0].msg,
    /was learned serving llama-3-70b, not llama-3-8b: starting cold/,
  );
  assert.equal(other.learned.outputs.predict('interactive', 'acme').source, 'prior');
  const same = persistence(store, undefined, undefined, 'llama-3-70b');
  await same.p.restore();
  assert.equal(same.learned.outputs.predict('interactive', 'acme').source, 'tenant');
  // What it saves names the model it serves.
  same.p.start();
  await runTo(same.clock, INTERVAL_MS);
  assert.match(store.saved[0], /"saved_at":"[^"]+","model":"llama-3-70b","output_lengths"/);
  await same.p.stop();
});

test('what images by URL took is saved beside the output lengths: a restart plans from it', async () => {
  const rule = parseImageTokens('qwen2-vl');
  if (rule.rule !== 'qwen2-vl') throw new Error('a size rule');
  const taught = new LearnedImageTokens(rule);
  taught.restore(Array.from({ length: 30 }, (_, i) => 880 + i));
  assert.equal(taught.urlTokens, 907, 'the p90 of 880…909');
  const store = new HeldStore();
  await persistence(store, undefined, taught).p.save();
  store.stored = store.saved[0];
  // A restarted gateway starts from the file: planned as what they took, not as the most.
  const restarted = new LearnedImageTokens(rule);
  assert.equal(restarted.urlTokens, 16_386);
  const { p, log } = persistence(store, undefined, restarted);
  await p.restore();
  assert.equal(restarted.urlTokens, 907);
  assert.deepEqual(restarted.samples(), taught.samples());
  assert.equal(log.lines.find((l) => l.msg.includes('restored'))?.fields.url_images, 30);
  // Fewer than 20 counted: still planned at the most one can take.
  const few = new LearnedImageTokens(rule);
  few.restore([900, 910]);
  assert.equal(few.urlTokens, 16_386);
});

test('a learned-state path that is a FIFO is refused at start: its read would hang', () => {
  const dir = mkdtempSync(join(tmpdir(), 'goodput-fifo-'));
  try {
    const fifo = join(dir, 'state.json');
    execFileSync('mkfifo', [fifo]);
    assert.throws(
      () => fileLearnedStore(fifo, '--learned-state'),
      /--learned-state: expected a regular file/,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
