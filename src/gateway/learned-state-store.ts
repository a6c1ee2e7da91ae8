/**
 * Where a gateway keeps what its pipeline learned, across restarts (core/estimate/learned-state.ts
 * is the format). A file is written whole to a temporary beside it and renamed over it, so a
 * crash leaves the old state or the new, never half of one. A Redis key is written by every
 * gateway replica in turn and read by each one that starts: a new replica of a scaled-out
 * gateway starts from what the others learned. `LearnedPersistence` restores at start, saves
 * every interval and once more at shutdown. A state that cannot be read or saved is logged,
 * naming why, and the gateway goes on (cold, or with the state last saved): what was learned
 * saves capacity at a restart and is never a reason to refuse to start.
 */
import { answeredWithin } from './shared/answered-within.ts';
import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../core/errors.ts';
import type { Learned } from '../core/estimate/learned.ts';
import {
  learnedStateSlices,
  parseLearnedState,
  restoreLearned,
} from '../core/estimate/learned-state.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { TimerHandle, Timers } from '../core/ports/timers.ts';
import type { Ms } from '../core/request/units.ts';
import type { OpsLog } from './ops-log.ts';
import type { LearnedImageTokens } from './url-image-tokens.ts';
import type { PromptScale } from '../core/estimate/prompt-scale.ts';

export interface LearnedStateStore {
  /** Where the state is, for log lines: the path, or the Redis key. */
  readonly where: string;
  /** The text saved last; undefined when none was. Rejects when the store cannot be read. */
  load(): Promise<string | undefined>;
  save(text: string): Promise<void>;
  close(): Promise<void>;
}

/** The Redis key every replica writes its learned state to. */
export const LEARNED_STATE_KEY = 'goodput:learned-state';

/**
 * A file at `path`; a directory that does not exist, or a path that is one, is a ConfigError
 * naming `flag`.
 */
export function fileLearnedStore(path: string, flag: string): LearnedStateStore {
  const dir = dirname(path);
  const isDir = (p: string) => statSync(p, { throwIfNoEntry: false })?.isDirectory() === true;
  if (!isDir(dir)) throw new ConfigError(flag, `a file in a directory that exists (${dir})`, path);
  if (isDir(path)) throw new ConfigError(flag, 'a file, not a directory', path);
  // A FIFO or a device would hang the read, or take a save that never lands.
  const there = statSync(path, { throwIfNoEntry: false });
  if (there !== undefined && !there.isFile()) throw new ConfigError(flag, 'a regular file', path);
  return {
    where: path,
    async load() {
      try {
        return await readFile(path, 'utf8');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw e;
      }
    },
    async save(text) {
      const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
      try {
        await writeFile(tmp, text);
        await rename(tmp, path);
      } catch (e) {
        await rm(tmp, { force: true });
        throw e;
      }
    },
    async close() {},
  };
}

/** The key `LEARNED_STATE_KEY` in the Redis at `url`; the client is loaded only when asked for. */
export async function redisLearnedStore(
  url: string,
  clock: Clock,
  timers: Timers,
): Promise<LearnedStateStore> {
  const { gatewayRedisClient } = await import('./shared/redis-client.ts');
  // While disconnected, a save fails at once and is tried again next interval; a Redis that
  // hangs fails it at the command timeout.
  const client = gatewayRedisClient(url, 1_000, COMMAND_MS);
  const within = <T>(answer: Promise<T>) => answeredWithin(answer, COMMAND_MS, clock, timers);
  // The failover store reports Redis going down; here a failed load or save says so.
  client.on('error', () => {});
  // The client reconnects for ever; a start waits for it at most this long, then reads or
  // fails at once (no offline queue), and the gateway starts cold.
  const connected = client.connect().then(
    () => undefined,
    () => undefined,
  );
  return {
    where: `${url} ${LEARNED_STATE_KEY}`,
    async load() {
      let wait: TimerHandle | undefined;
      const late = new Promise<void>((ok) => (wait = timers.at(clock.now() + CONNECT_WAIT_MS, ok)));
      await Promise.race([connected, late]);
      wait?.cancel();
      return (await within(client.get(LEARNED_STATE_KEY))) ?? undefined;
    },
    async save(text) {
      await within(client.set(LEARNED_STATE_KEY, text));
    },
    async close() {
      // Saves are awaited before this; nothing is pending that a quit would wait for.
      if (client.isOpen) client.destroy();
    },
  };
}

/** How long a load or save waits for Redis's answer. */
const COMMAND_MS = 2_000;

/** How long a start waits for Redis before it reads the learned state (or starts cold). */
const CONNECT_WAIT_MS = 2_000;

/**
 * The store `--learned-state` names: `redis`, the key in the `--redis` server (`redisUrl`), or a
 * file path.
 */
export async function openLearnedStore(
  spec: string,
  redisUrl: string | undefined,
  clock: Clock,
  timers: Timers,
): Promise<LearnedStateStore> {
  if (spec !== 'redis') return fileLearnedStore(spec, '--learned-state');
  if (redisUrl === undefined) {
    throw new ConfigError('--learned-state', 'a file path, or redis with --redis', spec);
  }
  return redisLearnedStore(redisUrl, clock, timers);
}

/** Histories read from the model per turn of the event loop when saving (~20 µs each). */
const SLICES_PER_TURN = 32;

export interface PersistenceOptions {
  readonly intervalMs: Ms;
  readonly clock: Clock;
  readonly timers: Timers;
  /** Wall time, Unix ms: what `saved_at` records and a restored state's age is taken from. */
  readonly epochMs: () => Ms;
  readonly log: OpsLog;
  /** What images by URL took, learned beside the output lengths, when the gateway learns it. */
  readonly urlImages?: Pick<LearnedImageTokens, 'samples' | 'restore'>;
  /** The scale of its prompts, when the gateway learns it. */
  readonly promptScale?: Pick<PromptScale, 'sums' | 'restore'>;
  /** The model it serves: a state learned serving another is not taken up. */
  readonly model?: string;
  /** Each save's result, and whether the start restored a state (metrics). */
  readonly onSave?: (ok: boolean) => void;
  readonly onRestored?: () => void;
}

export class LearnedPersistence {
  private readonly store: LearnedStateStore;
  private readonly learned: Learned;
  private readonly o: PersistenceOptions;
  private timer: TimerHandle | null = null;
  private stopped = false;
  /** The save under way, if any: saves run one at a time. */
  private saving: Promise<void> = Promise.resolve();
  /** Whether the last save failed: a failure is logged once, and so is the recovery. */
  private failing = false;
  /**
   * The store could not be read at start (Redis down, a read error): what it holds may be good,
   * so nothing is saved over it until it has been read — tried again each interval.
   */
  private unread = false;

  constructor(store: LearnedStateStore, learned: Learned, o: PersistenceOptions) {
    this.store = store;
    this.learned = learned;
    this.o = o;
  }

  /** Takes the pipeline up from the state saved last, if there is one it can read. */
  async restore(): Promise<void> {
    const where = this.store.where;
    let text: string | undefined;
    try {
      text = await this.store.load();
    } catch (e) {
      if (!this.unread) {
        this.o.log.warn(
          { learned_state: where, cause: (e as Error).message },
          `learned state at ${where} could not be read: starting cold, and saving nothing over it until it is read`,
        );
      }
      this.unread = true;
      return;
    }
    this.unread = false;
    if (text === undefined) {
      this.o.log.info({ learned_state: where }, `no learned state at ${where} yet: starting cold`);
      return;
    }
    try {
      const state = parseLearnedState(text);
      if (state.model !== undefined && this.o.model !== undefined && state.model !== this.o.model) {
        this.o.log.warn(
          { learned_state: where, learned_serving: state.model, serving: this.o.model },
          `learned state at ${where} was learned serving ${state.model}, not ${this.o.model}: starting cold; the next save replaces it`,
        );
        return;
      }
      const summary = restoreLearned(this.learned, state);
      this.o.urlImages?.restore(state.urlImageTokens);
      this.o.promptScale?.restore(state.promptScale);
      this.o.onRestored?.();
      const ageS = Math.round((this.o.epochMs() - state.savedAtMs) / 1000);
      const prompts = Object.values(state.promptScale).reduce((n, s) => n + s.pairs, 0);
      this.o.log.info(
        {
          learned_state: where,
          age_s: ageS,
          ...summary,
          url_images: state.urlImageTokens.length,
          prompts_counted: prompts,
        },
        `output lengths restored from ${where}, saved ${ageS} s ago`,
      );
    } catch (e) {
      this.o.log.warn(
        { learned_state: where, cause: (e as Error).message },
        `learned state at ${where} is not valid (${(e as Error).message}): starting cold; the next save replaces it`,
      );
    }
  }

  /** Saves every interval from now on. */
  start(): void {
    const next = () => {
      // A stop while the interval's save ran: no more intervals.
      if (this.stopped) return;
      this.timer = this.o.timers.at(this.o.clock.now() + this.o.intervalMs, () => {
        // Unread still, the interval's save is not made, and counted as failed: it is not kept.
        const read = this.unread ? this.restore() : Promise.resolve();
        void read.then(() => (this.unread ? this.o.onSave?.(false) : this.save())).then(next);
      });
    };
    next();
  }

  /** Stops the interval's saves and saves once more: what was learned up to now. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
    if (!this.unread) await this.save();
    await this.store.close();
  }

  /**
   * The state's text, read from the model a few histories a turn: with thousands of tenants it
   * takes tens of milliseconds, which in one turn would stall every stream.
   */
  private async text(): Promise<string> {
    const parts: string[] = [];
    const beside = {
      model: this.o.model,
      urlImageTokens: this.o.urlImages?.samples(),
      promptScale: this.o.promptScale?.sums(),
    };
    for (const slice of learnedStateSlices(this.learned, this.o.epochMs(), beside)) {
      if (parts.push(slice) % SLICES_PER_TURN === 0) {
        await new Promise<void>((ok) => this.o.timers.at(this.o.clock.now(), ok));
      }
    }
    return parts.join('');
  }

  /** Saves now, after any save under way; never rejects. */
  save(): Promise<void> {
    this.saving = this.saving.then(async () => {
      const where = this.store.where;
      try {
        await this.store.save(await this.text());
        if (this.failing) this.o.log.info({ learned_state: where }, `learned state saved again`);
        this.failing = false;
        this.o.onSave?.(true);
      } catch (e) {
        if (!this.failing) {
          this.o.log.warn(
            { learned_state: where, cause: (e as Error).message },
            `learned state could not be saved to ${where}: trying again every interval`,
          );
        }
        this.failing = true;
        this.o.onSave?.(false);
      }
    });
    return this.saving;
  }
}
