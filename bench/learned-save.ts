// What saving the learned state costs a gateway's event loop: a model of 2 classes × 1,000
// tenants × 256 outputs (the most a snapshot keeps per class: SNAPSHOT_TENANTS), saved to a file
// in one turn (`learnedStateText`, as the simulator writes it) and as the gateway saves it
// (`LearnedPersistence`: a few histories a turn). A 1 ms interval timer runs beside each save;
// the longest gap between its ticks is what a stream's next token would have waited. Five saves
// each, side by side; median and worst of the longest gaps, and each save's wall time.
// Usage: node bench/learned-save.ts [--tenants 1000]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { flag } from './bench-args.ts';
import { presetPolicy } from '../src/core/config/presets.ts';
import { Learned } from '../src/core/estimate/learned.ts';
import { learnedStateText } from '../src/core/estimate/learned-state.ts';
import { LearnedPersistence, fileLearnedStore } from '../src/gateway/learned-state-store.ts';
import { SILENT_OPS_LOG } from '../src/gateway/ops-log.ts';
import { wallClock } from '../src/runtime/wall-clock.ts';
import { wallTimers } from '../src/runtime/wall-timers.ts';

const TENANTS = Number(flag('--tenants') ?? 1000);
const learned = new Learned(presetPolicy('goodput'));
for (const cls of ['interactive', 'batch'] as const) {
  for (let t = 0; t < TENANTS; t++) {
    for (let i = 0; i < 256; i++) {
      learned.outputs.observe(cls, `tenant-${t}`, (i * 7919 + t) % 3000, i % 50 === 0);
    }
  }
}
const dir = mkdtempSync(join(tmpdir(), 'goodput-learned-save-'));
const file = join(dir, 'state.json');
const persistence = new LearnedPersistence(fileLearnedStore(file, '--file'), learned, {
  intervalMs: 3_600_000,
  clock: wallClock,
  timers: wallTimers(wallClock),
  epochMs: () => Date.now(),
  log: SILENT_OPS_LOG,
});

/** Runs `save` beside a 1 ms ticker: the longest gap between ticks, and the save's wall time. */
async function measured(save: () => Promise<void>): Promise<{ gapMs: number; wallMs: number }> {
  let last = performance.now();
  let gapMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    gapMs = Math.max(gapMs, now - last);
    last = now;
  }, 1);
  await new Promise((r) => setTimeout(r, 20));
  gapMs = 0;
  const start = performance.now();
  await save();
  const wallMs = performance.now() - start;
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(ticker);
  return { gapMs, wallMs };
}

const ways = {
  'one turn (learnedStateText + write)': async () => {
    writeFileSync(file, learnedStateText(learned, Date.now()));
  },
  'sliced (LearnedPersistence.save)': () => persistence.save(),
};
const runs: Record<string, { gapMs: number; wallMs: number }[]> = {};
for (let round = 0; round < 5; round++) {
  for (const [name, save] of Object.entries(ways)) (runs[name] ??= []).push(await measured(save));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${2 * TENANTS} tenant histories + 2 class histories, 256 outputs each`);
for (const [name, rs] of Object.entries(runs)) {
  const gaps = rs.map((r) => r.gapMs);
  console.log(
    `${name.padEnd(36)} longest loop gap median ${median(gaps).toFixed(1)} ms, worst ` +
      `${Math.max(...gaps).toFixed(1)} ms; save ${median(rs.map((r) => r.wallMs)).toFixed(0)} ms`,
  );
}
rmSync(dir, { recursive: true, force: true });
