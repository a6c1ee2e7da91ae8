// Golden runs: a small scenario's report is byte-identical across runs and matches the file
// committed under test/golden/. Regenerate deliberately with UPDATE_GOLDEN=1 npm test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { deterministicPart, run } from './helpers.ts';

const SYNTHETIC_MIX = {
  rate: 25,
  numRequests: 300,
  replicas: 2,
  arrival: 'gamma' as const,
  burstiness: 0.5,
  input: 'sharegpt-sarathi',
  output: 'sharegpt-sarathi',
  tenants: 'zipf:4:1.1',
  classes: 'interactive:0.6,reasoning:0.1,batch:0.2,best_effort:0.1',
  clientTimeoutMs: 20_000,
  maxAttempts: 2,
  seed: 42,
};

const goldens: Record<string, Parameters<typeof run>[0] & { policy?: string }> = {
  'synthetic-mix': SYNTHETIC_MIX,
  'azure-conv-200': {
    // Relative to the repository root (npm test's working directory), so the recorded path is the same on every machine.
    trace: 'test/fixtures/traces/azure-conv-200.csv',
    rateScale: 4,
    replicas: 1,
    seed: 3,
  },
  'goodput-synthetic-mix': { ...SYNTHETIC_MIX, policy: 'goodput' },
};

for (const [name, { policy, ...spec }] of Object.entries(goldens)) {
  test(`golden: ${name} is byte-identical across runs and matches the committed report`, () => {
    const first = deterministicPart(run(spec, policy));
    const second = deterministicPart(run(spec, policy));
    assert.equal(first, second);
    const file = fileURLToPath(new URL(`./golden/${name}.json`, import.meta.url));
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(file, first);
    assert.equal(first, readFileSync(file, 'utf8'));
  });
}
