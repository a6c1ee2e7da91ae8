/**
 * The events added to the log of a background response's stream, by Redis pub/sub: a replica
 * whose clients follow a stream that runs on another is told them as the log takes them (the
 * store's `APPEND_EVENTS` publishes them), instead of reading the log ten times a second. One
 * subscriber connection a process, opened at the first watch; a channel a log, subscribed
 * while a reader here watches it. Pub/sub keeps nothing across a reconnect, so a watcher still
 * reads the log now and then (http/stream-readers.ts). Like the store, it never throws on its
 * own account: a watch that cannot subscribe rejects, and its reader reads the log as often as
 * without one.
 */
import type { createClient } from 'redis';
import type { Told } from './shared-store.ts';

type Client = ReturnType<typeof createClient>;

export class LogWatch {
  readonly #open: () => Client;
  #sub: Promise<Client> | undefined;
  /** Each channel subscribed, and who watches it. */
  readonly #watchers = new Map<string, Set<Told>>();
  /** The listener each channel's watchers were subscribed with. */
  readonly #heard = new WeakMap<Set<Told>, (message: string) => void>();

  /** `open`: a client of its own, not yet connected (it becomes a subscriber). */
  constructor(open: () => Client) {
    this.#open = open;
  }

  /** Tells `told` each message to `channel` until the function it resolves with is called. */
  async watch(channel: string, told: Told): Promise<() => void> {
    const sub = await this.#connected();
    let watchers = this.#watchers.get(channel);
    if (watchers === undefined) {
      const all = (watchers = new Set());
      this.#watchers.set(channel, all);
      // Its own listener, let go by itself: the client sends UNSUBSCRIBE once none is left,
      // and a channel watched again meanwhile keeps the new one.
      const heard = (message: string) => {
        const { from, events } = readMessage(message);
        for (const w of all) w(from, events);
      };
      this.#heard.set(all, heard);
      try {
        await sub.subscribe(channel, heard);
      } catch (e) {
        this.#watchers.delete(channel);
        throw e;
      }
    }
    const mine = watchers;
    mine.add(told);
    return () => {
      mine.delete(told);
      if (mine.size > 0 || this.#watchers.get(channel) !== mine) return;
      this.#watchers.delete(channel);
      void sub.unsubscribe(channel, this.#heard.get(mine)).catch(() => {});
    };
  }

  close(): void {
    void this.#sub?.then((s) => s.isOpen && s.destroy()).catch(() => {});
    this.#sub = undefined;
    this.#watchers.clear();
  }

  /** The subscriber, connected; a connection that failed is tried anew at the next watch. */
  #connected(): Promise<Client> {
    this.#sub ??= (async () => {
      const sub = this.#open();
      // Its errors are the reconnects it makes; each watch that fails says so itself.
      sub.on('error', () => {});
      try {
        await sub.connect();
      } catch (e) {
        this.#sub = undefined;
        if (sub.isOpen) sub.destroy();
        throw e;
      }
      return sub;
    })();
    return this.#sub;
  }
}

/** A message `APPEND_EVENTS` published: the index of the first event, a newline, the events. */
function readMessage(message: string): { readonly from: number; readonly events: string[] } {
  const line = message.indexOf('\n');
  const events = message
    .slice(line + 1)
    .split('\n\n')
    .filter((e) => e !== '')
    .map((e) => `${e}\n\n`);
  return { from: Number(message.slice(0, line)), events };
}
