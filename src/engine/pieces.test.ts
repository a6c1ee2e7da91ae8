// Tests for staged prompts in the engine (pieces.ts): a prompt sent a piece at a time is
// computed no further than its piece in a step, and sits out the step after each piece.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EngineConfig, EngineRequest } from './engine-types.ts';
import { Recorder, recordingProfile, req, runLoop, testConfig } from './engine-test-kit.ts';
import { ReplicaCore } from './replica.ts';
import type { StepShape } from './timing/profile.ts';

test('a staged prompt: one piece a step, a step without it after each, beside a stream', () => {
  const shapes: StepShape[] = [];
  const rec = new Recorder();
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ maxBatchedTokens: 256 }),
    recordingProfile(10, shapes),
    rec,
  );
  core.add(req('s', 10, 20), 0);
  core.add({ ...req('p', 200, 2), pieceTokens: 64 }, 0);
  runLoop(core);
  // Step 1: the stream's prompt and the first piece; then rest, 64, rest, 64, rest, the last 8.
  const prefill = shapes.slice(0, 8).map((s) => s.prefillTokens);
  assert.deepEqual(prefill, [10 + 64, 0, 64, 0, 64, 0, 8, 0]);
  assert.ok(rec.lines.includes('70 first p from=60 cached=0'), rec.lines.join('\n'));
});

/** The prompt tokens of each step an engine of `config` runs for one staged prompt alone. */
function stepsAlone(config: Partial<EngineConfig>, promptTokens: number): number[] {
  const shapes: StepShape[] = [];
  const core = new ReplicaCore<EngineRequest>(
    testConfig({ maxBatchedTokens: 256, ...config }),
    recordingProfile(10, shapes),
    new Recorder(),
  );
  core.add({ ...req('p', promptTokens, 1), pieceTokens: 64 }, 0);
  runLoop(core);
  return shapes.map((s) => s.prefillTokens);
}

test('a staged prompt alone waits out no step: its next piece is there at once', () => {
  assert.deepEqual(stepsAlone({}, 200), [64, 64, 64, 8]);
});

test("a staged piece is cut by the engine's own chunk cap and the step's budget too", () => {
  // 48 of the first piece, its last 16, then 36: the engine's cap within each piece.
  assert.deepEqual(stepsAlone({ longPrefillTokenThreshold: 48 }, 100), [48, 16, 36]);
});
