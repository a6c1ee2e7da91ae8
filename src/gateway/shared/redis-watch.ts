/**
 * What the store's scripts publish, by Redis pub/sub: the events added to the log of a
 * background response's stream (`APPEND_EVENTS`), so a replica whose clients follow a stream
 * that runs on another is told them as the log takes them instead of reading the log ten times
 * a second; and the ends of kept turns (`TAKE_TURN`, `END_TURN`), so the replica that kept one
 * stops counting it. One subscriber connection a process, opened at the first watch; a channel
 * subscribed while anyone here watches it. Pub/sub keeps nothing across a reconnect, so a
 * watcher of a log still reads the log now and then (http/stream-readers.ts), and a turn whose
 * end went unheard runs out. Like the store, it never throws on its own account: a watch that
 * cannot subscribe rejects.
 */
import type { createClient } from 'redis';
import type { Told } from './shared-store.ts';

type Client = ReturnType<typeof createClient>;
type Heard = (message: string) => void;

/** A channel's watchers, and the listener it was subscribed with. */
interface Channel {
  readonly watchers: Set<Heard>;
  readonly heard: Heard;
}

export class LogWatch {
  readonly #open: () => Client;
  #sub: Promise<Client> | undefined;
  /** Each channel subscribed: who watches it, and the listener it was subscribed with. */
  readonly #channels = new Map<string, Channel>();
  /** Closed with its store: no subscriber is opened again. */
  #closed = false;

  /** `open`: a client of its own, not yet connected (it becomes a subscriber). */
  constructor(open: () => Client) {
    this.#open = open;
  }

  /** Tells `told` each message to `channel` until the function it resolves with is called. */
  async watch(channel: string, told: Heard): Promise<() => void> {
    if (this.#closed) throw new Error('the store is closed');
    const sub = await this.#connected();
    let mine = this.#channels.get(channel);
    if (mine === undefined) {
      const watchers = new Set<Heard>();
      // Its own listener, let go by itself: the client sends UNSUBSCRIBE once none is left,
      // and a channel watched again meanwhile keeps the new one.
      const heard = (message: string) => {
        for (const w of watchers) w(message);
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
    this.#closed = true;
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

/** Tells `told` the events of a message `APPEND_EVENTS` published. */
export function toldEvents(told: Told): Heard {
  return (message) => {
    const { from, events } = readMessage(message);
    told(from, events);
  };
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
