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

/** A channel's watchers, and the listener it was subscribed with. */
interface Channel {
  readonly watchers: Set<Told>;
  readonly heard: (message: string) => void;
}

export class LogWatch {
  readonly #open: () => Client;
  #sub: Promise<Client> | undefined;
  /** Each channel subscribed: who watches it, and the listener it was subscribed with. */
  readonly #channels = new Map<string, Channel>();

  /** `open`: a client of its own, not yet connected (it becomes a subscriber). */
  constructor(open: () => Client) {
    this.#open = open;
  }

  /** Tells `told` each message to `channel` until the function it resolves with is called. */
  async watch(channel: string, told: Told): Promise<() => void> {
    const sub = await this.#connected();
    let mine = this.#channels.get(channel);
    if (mine === undefined) {
      const watchers = new Set<Told>();
      // Its own listener, let go by itself: the client sends UNSUBSCRIBE once none is left,
      // and a channel watched again meanwhile keeps the new one.
      const heard = (message: string) => {
        const { from, events } = readMessage(message);
        for (const w of watchers) w(from, events);
      };
      mine = { watchers, heard };
      this.#channels.set(channel, mine);
      try {
        await sub.subscribe(channel, heard);
      } catch (e) {
        this.#channels.delete(channel);
        throw e;
      }
    }
    const { watchers, heard } = mine;
    watchers.add(told);
    return () => {
      watchers.delete(told);
      if (watchers.size > 0 || this.#channels.get(channel) !== mine) return;
      this.#channels.delete(channel);
      void sub.unsubscribe(channel, heard).catch(() => {});
    };
  }

  close(): void {
    void this.#sub?.then((s) => s.isOpen && s.destroy()).catch(() => {});
    this.#sub = undefined;
    this.#channels.clear();
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
