/**
 * Every router, registered once: a named composition of filters, weighted scorers and a picker
 * (`route.ts`). Config and presets refer to routers only by these names. Besides Goodput's own
 * (`expected-completion`), the baselines model what other routers do, each in one line.
 */
import type { RouterSpec } from './route.ts';

const SPECS: readonly RouterSpec[] = [
  {
    type: 'round-robin',
    description: 'the next replica in turn, blind to load (a Kubernetes Service)',
    filters: [],
    scorers: [],
    picker: 'rotate',
  },
  {
    type: 'least-request',
    description:
      'the fewest requests this control plane has in flight (Envoy LEAST_REQUEST, production-stack)',
    filters: [],
    scorers: [{ name: 'in-flight', weight: 1 }],
    picker: 'lowest',
  },
  {
    type: 'least-kv',
    description: 'the lowest KV cache usage the engines report',
    filters: [],
    scorers: [{ name: 'kv-usage', weight: 1 }],
    picker: 'lowest',
  },
  {
    type: 'llm-d-like',
    description:
      "llm-d's scheduler: engine queue depth (×2), KV utilisation (×2) and prefix-cache affinity (×3), each min-max scaled",
    filters: [],
    scorers: [
      { name: 'queue-depth', weight: 2, minMax: true },
      { name: 'kv-usage', weight: 2, minMax: true },
      { name: 'prefix-miss', weight: 3, minMax: true },
    ],
    picker: 'lowest',
    prefix: true,
  },
  {
    type: 'sglang-cache-aware',
    description:
      "SGLang's router: the best prefix match above half the prompt, else the smallest cache; least load once loads are imbalanced",
    filters: [],
    scorers: [],
    picker: 'cache-aware',
    prefix: true,
  },
  {
    type: 'session-hash',
    description:
      "vLLM production-stack's session router: a session hashes to one replica, blind to load",
    filters: [],
    scorers: [],
    picker: 'session-hash',
  },
  {
    type: 'expected-completion',
    description:
      "the time the request costs there, in ms: its completion (queue work + prefill after the cache hit + decode at that load) plus the decode time its prefill's slow gaps are expected to waste beside it",
    filters: [],
    scorers: [{ name: 'expected-cost', weight: 1 }],
    picker: 'lowest-seeded',
    prefix: true,
    pricesStalls: true,
  },
];

export const ROUTERS: Readonly<Record<string, RouterSpec>> = Object.fromEntries(
  SPECS.map((s) => [s.type, s]),
);
