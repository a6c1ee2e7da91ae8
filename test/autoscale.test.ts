// Autoscaling in the simulator: a group is capacity only after its ready time, scale-in drains
// (no request lost, GPUs held until the last one ends), the report accounts for every group,
// and the same seed gives the same timeline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './helpers.ts';
import { tempDir } from './temp-dir.ts';

const spec = {
  rate: 60,
  numRequests: 9_000,
  input: 'sharegpt-vllm',
  output: 'sharegpt-vllm',
  autoscaler: 'goodput',
  minReplicas: 1,
  maxReplicas: 6,
  readyTime: '60-90',
};

test('goodput autoscaling: a load beyond one group scales out, groups serve after their ready time, none is lost', () => {
  const r = run(spec);
  const a = r.autoscale as Record<string, unknown> & {
    timeline: { t_s: number; desired: number; ready: number; starting: number }[];
    ready_time_s: { mean: number; by_stage: Record<string, number> };
  };
  assert.ok(
    a.timeline.some((t) => t.desired > 1),
    'it scaled out',
  );
  // Nothing was ready before its ready time: the first extra group serves no sooner than 60 s.
  const firstExtra = a.timeline.find((t) => t.ready > 1);
  assert.ok(firstExtra !== undefined && firstExtra.t_s >= 60, JSON.stringify(firstExtra));
  assert.ok(a.ready_time_s.mean >= 60 && a.ready_time_s.mean <= 90);
  const stages = Object.values(a.ready_time_s.by_stage).reduce((x, y) => x + y, 0);
  assert.ok(Math.abs(stages - a.ready_time_s.mean) < 0.01, 'the stages add up to the ready time');
  assert.equal(a.lost_in_scale_in, 0);
  assert.equal(r.completed + r.failed + r.cancelled + r.admission.rejected, 9_000);
  // GPUs are held from a group's request: more GPU time than ready time.
  assert.ok(r.fleet.gpu_seconds > r.fleet.replicas_ready_mean * r.duration_s);
});

test('the same seed gives the same timeline; a fixed fleet reports no autoscaling', () => {
  assert.deepEqual(run(spec).autoscale, run(spec).autoscale);
  const fixed = { rate: 60, numRequests: 500, input: spec.input, output: spec.output };
  assert.equal(run(fixed).autoscale, undefined);
});

test('a group failure drops ready capacity at once, its requests finish elsewhere (streams resumed), and the controller replaces it', () => {
  const r = run({
    ...spec,
    minReplicas: 3,
    rate: 40,
    numRequests: 8_000,
    failGroupAtS: [100],
  });
  const failures = r.fleet.failures as {
    groups: number;
    failovers: number;
    streams_resumed: number;
    recomputed_tokens: number;
  };
  assert.equal(failures.groups, 1);
  assert.ok(failures.failovers + failures.streams_resumed > 0, JSON.stringify(failures));
  assert.ok(failures.recomputed_tokens > 0);
  // Every request the group held finished elsewhere.
  assert.equal(r.fail_reasons.replica_lost ?? 0, 0, JSON.stringify(r.fail_reasons));
  const tl = (r.autoscale as { timeline: { t_s: number; ready: number; starting: number }[] })
    .timeline;
  const after = tl.find((t) => t.t_s >= 100) as { ready: number; starting: number };
  assert.equal(after.ready, 2, 'one ready group fewer at once');
  assert.ok(after.starting >= 1, 'a replacement is starting');
  assert.ok(
    tl.some((t) => t.t_s > 160 && t.ready === 3),
    'and ready after its ready time',
  );
  assert.equal(r.completed + r.failed + r.cancelled + r.admission.rejected, 8_000);
});

test('a failure due after the workload has ended never happens: the run ends with its requests', () => {
  const short = { rate: 20, numRequests: 100, input: spec.input, output: spec.output };
  const plain = run(short);
  const late = run({ ...short, failGroupAtS: [100_000] });
  assert.equal(late.duration_s, plain.duration_s, 'not stretched to the failure');
  assert.equal(late.goodput.requests_per_s, plain.goodput.requests_per_s);
  assert.deepEqual(late.fleet.failures, {
    groups: 0,
    failovers: 0,
    streams_resumed: 0,
    recomputed_tokens: 0,
  });
});

test('nor when the last request ends in its own arrival (refused at the door)', () => {
  const file = join(tempDir('late-failure'), 'refused-last.jsonl');
  const rows = Array.from({ length: 10 }, (_, i) => ({
    t_ms: i * 100,
    input_tokens: 500,
    output_tokens: 50,
  }));
  // Past llama-3-8b's 8K context: refused as it arrives, the last to end.
  rows.push({ t_ms: 5_000, input_tokens: 100_000, output_tokens: 50 });
  writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const r = run({ trace: file, replicas: 2, failGroupAtS: [100], prefixResetAtS: [200] });
  assert.equal(r.duration_s, 5, 'not stretched to the failure');
  assert.equal(r.fleet.failures?.groups, 0);
  assert.equal(r.fleet.prefix_resets?.resets, 0);
});

test('an operator freeze: inside its window no decision is taken, outside the controller scales', () => {
  const r = run({ ...spec, scaleFreezes: [{ fromS: 0, toS: 60 }] });
  const timeline = (r.autoscale as { timeline: { t_s: number; desired: number; reason: string }[] })
    .timeline;
  const inside = timeline.filter((t) => t.t_s < 60);
  assert.ok(inside.length > 0 && inside.every((t) => t.reason === 'frozen' && t.desired === 1));
  assert.ok(
    timeline.some((t) => t.t_s >= 60 && t.desired > 1),
    'thawed, it scales out',
  );
  assert.equal(r.completed + r.failed + r.cancelled + r.admission.rejected, 9_000);
});

test("a canary holds one group's GPUs: counted in GPU-seconds, and the ceiling is one lower while it runs", () => {
  const plain = run({ ...spec, maxReplicas: 3 });
  const r = run({ ...spec, maxReplicas: 3, canaries: [{ fromS: 30, toS: 120 }] });
  const timeline = (r.autoscale as { timeline: { t_s: number; desired: number }[] }).timeline;
  assert.ok(timeline.filter((t) => t.t_s >= 30 && t.t_s < 120).every((t) => t.desired <= 2));
  assert.ok(
    timeline.some((t) => t.desired === 3),
    'the ceiling returns once the canary ends',
  );
  assert.deepEqual(r.fleet.canary, { windows: 1, held_s: 90 });
  const held = (x: typeof r) => x.fleet.gpu_seconds;
  assert.ok(held(r) > 90, `${held(r)} GPU-seconds include the canary's 90`);
  assert.equal(plain.fleet.canary, undefined);
});
