/**
 * A replica group is the unit of capacity: the TP × PP GPUs of one engine, ready together or
 * not at all. A new group is not capacity when it is requested: it goes through GPU node
 * allocation, image pull, weight load and sharding, tensor-parallel rank init, kernel compile
 * and graph capture, a warm-up generation and registration — typically 2–5 minutes — and only
 * then serves. Scale-in drains it first: it takes no new request, its running ones finish, and
 * only then are its GPUs released. GPUs are held from the request to the release.
 */
import type { Ms } from '../request/units.ts';

/** The stages a group passes through before it is ready, in order. */
export const GROUP_STAGES = [
  'provisioning',
  'image',
  'weights',
  'rank_init',
  'compile',
  'warmup',
  'registering',
] as const;
export type GroupStage = (typeof GROUP_STAGES)[number];

/**
 * Each stage's share of a group's ready time when only the total is known (`--ready-time`):
 * node allocation and image pull a third, weight load another, compile and graph capture a
 * fifth, the rest small — as cold starts of an 8B model on a fresh node break down.
 */
export const STAGE_SHARES: Readonly<Record<GroupStage, number>> = {
  provisioning: 0.15,
  image: 0.15,
  weights: 0.3,
  rank_init: 0.05,
  compile: 0.2,
  warmup: 0.1,
  registering: 0.05,
};

export type GroupState = 'starting' | 'ready' | 'draining' | 'removed';

/** How long a new group takes to be ready: a uniform range (ms), drawn per group. */
export interface ReadyTime {
  readonly minMs: Ms;
  readonly maxMs: Ms;
}

/** `120-240` or `180` (seconds) → a ready-time range in ms; undefined when malformed. */
export function parseReadyTime(text: string): ReadyTime | undefined {
  const m = /^(\d+(?:\.\d+)?)(?:-(\d+(?:\.\d+)?))?$/.exec(text.trim());
  if (m === null) return undefined;
  const lo = Number(m[1]);
  const hi = m[2] === undefined ? lo : Number(m[2]);
  if (!(lo >= 0) || !(hi >= lo)) return undefined;
  return { minMs: lo * 1000, maxMs: hi * 1000 };
}

/** The stages of one group's start, each its share of a ready time drawn with `u` in [0, 1). */
export function stageDurations(ready: ReadyTime, u: number): Record<GroupStage, Ms> {
  const total = ready.minMs + u * (ready.maxMs - ready.minMs);
  const out = {} as Record<GroupStage, Ms>;
  for (const s of GROUP_STAGES) out[s] = total * STAGE_SHARES[s];
  return out;
}

/** One group's life, as the fleet keeps it: when it was requested, became ready, drained, left. */
export interface GroupRecord {
  readonly index: number;
  state: GroupState;
  readonly requestedMs: Ms;
  /** When it is (or was) ready; Infinity while unknown. */
  readyMs: Ms;
  drainStartMs: Ms;
  removedMs: Ms;
  /** Its start, stage by stage (ms). */
  readonly stages: Readonly<Record<GroupStage, Ms>>;
}
