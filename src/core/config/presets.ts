/**
 * Named policies. The baselines are what real deployments run today, so every later policy is
 * measured against them: `baseline-vllm` (admit all, dispatch at once, round-robin, engine
 * FIFO) and `least-request` (the same with least-request routing). `goodput` turns everything
 * on: the four admission gates, degrade ladders, deferral, dispatch under flow control, and
 * expected-completion routing.
 */
import { ConfigError } from '../errors.ts';
import { resolvePolicy, type PolicyFile, type ResolvedPolicy } from './policy.ts';

export const PRESETS: Readonly<Record<string, PolicyFile>> = {
  'baseline-vllm': {
    name: 'baseline-vllm',
    policy_revision: 'baseline-vllm@1',
    description: 'No admission control; dispatch at once; round-robin; the engine queues FIFO.',
    admission: { type: 'admit-all' },
    dispatch: { type: 'immediate' },
    routing: { type: 'round-robin' },
  },
  'least-request': {
    name: 'least-request',
    policy_revision: 'least-request@1',
    description:
      'No admission control; dispatch at once to the replica with the fewest requests in flight.',
    admission: { type: 'admit-all' },
    dispatch: { type: 'immediate' },
    routing: { type: 'least-request' },
  },
  goodput: {
    name: 'goodput',
    policy_revision: 'goodput@5',
    description:
      'Contract, budget, memory and deadline gates; degrade, defer or reject with Retry-After; ' +
      'priority bands, tenant-fair (virtual token counters) within each; dispatch under KV and token-gap flow control; ' +
      'among replicas that fit, the one where the request costs least in time (expected-completion: queue work, adapter, prefill after the cached prefix, decode, and the decode time the slow gaps of its prefill are expected to waste beside it).',
    admission: { type: 'goodput' },
    dispatch: { type: 'flow-control' },
    routing: { type: 'expected-completion' },
  },
};

export function presetPolicy(name: string): ResolvedPolicy {
  const preset = Object.hasOwn(PRESETS, name) ? PRESETS[name] : undefined;
  if (preset === undefined) {
    throw new ConfigError('policy', `a preset (${Object.keys(PRESETS).join(', ')})`, name);
  }
  return resolvePolicy(preset);
}
