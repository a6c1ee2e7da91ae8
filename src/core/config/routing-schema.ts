/**
 * The policy's `routing` section: which router (`../routing/registry.ts`), how its prefix index
 * is fed, session stickiness, and the seed of its tie-breaks.
 */
import { z } from 'zod';
import { ROUTERS } from '../routing/registry.ts';
import type { PrefixMode } from '../routing/prefix-index.ts';
import type { SessionPolicy } from '../routing/sessions.ts';

export const routingSchema = z
  .object({
    type: z.enum(Object.keys(ROUTERS) as [string, ...string[]]),
    /**
     * `approximate` (default): the router assumes the blocks of each prompt it placed are cached
     * there, within the replica's KV size; `precise`: the engines' KV events say (a host that
     * has them: the simulator).
     */
    prefix: z
      .object({ mode: z.enum(['approximate', 'precise']) })
      .strict()
      .optional(),
    session: z
      .object({
        mode: z.enum(['soft', 'hard']),
        ttl_ms: z.number().positive().optional(),
        slack_ms: z.number().min(0).optional(),
        max_sessions: z.int().positive().optional(),
      })
      .strict()
      .optional(),
    seed: z.int().min(0).optional(),
    /** Power-of-k choices: score only this many replicas drawn at random (large fleets). */
    choices: z.int().min(2).optional(),
  })
  .strict();

export interface RoutingConfig {
  readonly type: string;
  readonly prefixMode: PrefixMode;
  readonly session?: SessionPolicy;
  readonly seed: number;
  /** 0: every replica that passes the filters is scored. */
  readonly choices: number;
}

export function resolveRouting(r: z.infer<typeof routingSchema>): RoutingConfig {
  const s = r.session;
  return {
    type: r.type,
    prefixMode: r.prefix?.mode ?? 'approximate',
    session:
      s === undefined
        ? undefined
        : {
            mode: s.mode,
            ttlMs: s.ttl_ms ?? 600_000,
            slackMs: s.slack_ms ?? 250,
            maxSessions: s.max_sessions ?? 100_000,
          },
    seed: r.seed ?? 1,
    choices: r.choices ?? 0,
  };
}
