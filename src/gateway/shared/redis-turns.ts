/**
 * Kept turns in Redis (core/queueing/kept-turns.ts), so a retry finds its turn on whichever
 * gateway replica it lands: each a key holding when it is due on Redis's clock, expiring when
 * it is no longer held (lua-scripts.ts `KEEP_TURN`, `TAKE_TURN`, `END_TURN`). Its end — taken by
 * its retry, or dropped — is published on one channel, so the replica that kept it and counts it
 * stops counting it (redis-watch.ts).
 */
import type { TurnStanding } from '../../core/queueing/kept-turns.ts';
import type { Ms } from '../../core/request/units.ts';
import { END_TURN, KEEP_TURN, TAKE_TURN, type LuaScript } from './lua-scripts.ts';
import { TURNS_CHANNEL, turnKey } from './redis-keys.ts';
import type { LogWatch } from './redis-watch.ts';
import type { TurnEnd } from './shared-store.ts';

/** Runs a script (EVALSHA, EVAL when Redis has not seen it), answered within the timeout. */
type Run = (s: LuaScript, keys: string[], args: ReadonlyArray<string | number>) => Promise<unknown>;

export class RedisTurns {
  readonly #run: Run;
  readonly #watch: LogWatch;

  constructor(run: Run, watch: LogWatch) {
    this.#run = run;
    this.#watch = watch;
  }

  async keep(tenant: string, key: string, inMs: Ms, graceMs: Ms): Promise<void> {
    await this.#run(KEEP_TURN, [turnKey(tenant, key)], [inMs, graceMs]);
  }

  async take(
    tenant: string,
    key: string,
    earlyMs: Ms,
    by: string,
  ): Promise<TurnStanding | undefined> {
    const told = turnEndMessage({ by, outcome: 'claimed', tenant, key });
    const left = await this.#run(TAKE_TURN, [turnKey(tenant, key)], [earlyMs, TURNS_CHANNEL, told]);
    if (typeof left !== 'number') return undefined;
    return left <= 0 ? { due: true } : { due: false, inMs: left };
  }

  async end(tenant: string, key: string, outcome: TurnEnd['outcome'], by: string): Promise<void> {
    const told = turnEndMessage({ by, outcome, tenant, key });
    await this.#run(END_TURN, [turnKey(tenant, key)], [TURNS_CHANNEL, told]);
  }

  watch(told: (end: TurnEnd) => void): Promise<() => void> {
    return this.#watch.watch(TURNS_CHANNEL, (message) => {
      const end = turnEnd(message);
      if (end !== undefined) told(end);
    });
  }
}

/** A turn's end as its channel carries it (JSON: a key may hold any character). */
function turnEndMessage(end: TurnEnd): string {
  return JSON.stringify([end.by, end.outcome, end.tenant, end.key]);
}

/** A turn's end read from its message; undefined when it is not one. */
function turnEnd(message: string): TurnEnd | undefined {
  try {
    const [by, outcome, tenant, key] = JSON.parse(message) as unknown[];
    if (typeof by !== 'string' || typeof tenant !== 'string' || typeof key !== 'string') return;
    if (outcome !== 'claimed' && outcome !== 'dropped') return;
    return { by, outcome, tenant, key };
  } catch {
    return undefined;
  }
}
