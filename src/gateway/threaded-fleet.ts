/**
 * The embedded fleet on a thread of its own (`embedded-fleet-worker.ts`): each replica is a
 * `Backend` like any other, whose engine steps on the worker's event loop — a GPU's time that
 * the gateway's busy loop cannot stretch. Requests go over as messages; tokens come back a step
 * at a time and are handed to each stream's sink in order; a stream's abort cancels it in the
 * engine. Loads are the engines' own, as of the last message.
 */
import type { EngineConfig } from '../engine/engine-types.ts';
import { Worker } from 'node:worker_threads';
import type { Clock } from '../core/ports/clock.ts';
import { replicaConfigs } from '../core/fleet/adapter-placement.ts';
import type { Ms } from '../core/request/units.ts';
import {
  UpstreamError,
  type Backend,
  type BackendLoad,
  type StreamEnd,
  type TokenSink,
  type UpstreamCall,
} from './backend.ts';
import { generationRequest, promptField, servedAdapters } from './embedded-backend.ts';
import { TURN_WRITES } from './http/turn-writes.ts';
import type {
  FleetMessage,
  FleetReply,
  FleetRequest,
  FleetSetup,
  ReplicaLoadMessage,
} from './embedded-fleet-messages.ts';
import type { ImageTokens } from '../openai/image-size.ts';
import { choiceCount } from '../openai/request-fields.ts';

interface Stream {
  readonly name: string;
  readonly onToken: TokenSink;
  readonly resolve: (end: StreamEnd) => void;
  readonly reject: (e: unknown) => void;
  tokens: number;
}

/** Replies handed on between two looks at how long held writes have waited. */
const FLUSH_CHECK_EVERY = 64;

/** What a request needs of the engines' configuration: hashes' block size, adapters served. */
type EngineShape = Pick<EngineConfig, 'blockSize' | 'loraModules' | 'maxModelLen'>;

export class ThreadedFleet {
  readonly backends: Backend[];
  private readonly worker: Worker;
  private readonly streams = new Map<number, Stream>();
  private loads: readonly ReplicaLoadMessage[];
  private loadsAtMs: Ms;
  private nextId = 1;
  private closed = false;
  /** The prompt tokens an image takes in the engines' model (image-size.ts), if it takes any. */
  private readonly imageTokens: ImageTokens | undefined;

  private constructor(
    worker: Worker,
    first: readonly ReplicaLoadMessage[],
    engines: readonly EngineShape[],
    clock: Clock,
    imageTokens: ImageTokens | undefined,
  ) {
    this.worker = worker;
    this.imageTokens = imageTokens;
    this.loads = first;
    this.loadsAtMs = clock.now();
    worker.on('message', (m: FleetMessage) => {
      this.loads = m.loads;
      this.loadsAtMs = clock.now();
      if (m.t === 'batch') {
        // A step's tokens for hundreds of streams take milliseconds to hand on: what was held
        // earlier in the turn, or earlier in this batch, goes out once it has waited.
        const replies = m.replies;
        for (let i = 0; i < replies.length; i++) {
          if (i % FLUSH_CHECK_EVERY === 0) TURN_WRITES.flushIfLate();
          this.reply(replies[i]);
        }
      }
    });
    worker.on('error', (e) => this.failAll(`the embedded fleet's thread failed: ${e.message}`));
    worker.on('exit', () => this.failAll('the embedded fleet closed'));
    this.backends = first.map((_, i) => this.backend(i, engines[i]));
  }

  /**
   * Starts the thread and its `replicas` engines; resolves once they are up. Their model takes
   * images of `imageTokens` each, if given.
   */
  static async start(
    setup: FleetSetup,
    engine: EngineShape,
    clock: Clock,
    imageTokens?: ImageTokens,
  ): Promise<ThreadedFleet> {
    const worker = new Worker(new URL('./embedded-fleet-worker.ts', import.meta.url), {
      workerData: setup,
    });
    const first = await new Promise<readonly ReplicaLoadMessage[]>((resolve, reject) => {
      worker.once('message', (m: FleetMessage) => resolve(m.loads));
      worker.once('error', reject);
    });
    // Each replica's share of the adapters, as the worker's engines load them.
    const shapeOf = replicaConfigs(engine, setup.replicas, setup.adapterReplicas);
    return new ThreadedFleet(
      worker,
      first,
      first.map((_, i) => shapeOf(i)),
      clock,
      imageTokens,
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.post({ t: 'close' });
    await this.worker.terminate();
  }

  private backend(replica: number, engine: EngineShape): Backend {
    const name = `embedded-${replica}`;
    const servable = servedAdapters(engine);
    return {
      name,
      stream: (call, onToken) => this.stream(replica, name, engine, call, onToken),
      load: (): BackendLoad => {
        const l = this.loads[replica];
        return {
          ready: !this.closed,
          running: l.running,
          waiting: l.waiting,
          kvUsage: l.kvUsage,
          preemptions: l.preemptions,
          ...(l.loras === undefined ? {} : { loras: l.loras }),
          ...(servable === undefined ? {} : { servable }),
          atMs: this.loadsAtMs,
          ...(this.closed && { why: 'closed' }),
        };
      },
      close: () => this.close(),
    };
  }

  private stream(
    replica: number,
    name: string,
    engine: EngineShape,
    call: UpstreamCall,
    onToken: TokenSink,
  ): Promise<StreamEnd> {
    if (this.closed)
      return Promise.reject(new UpstreamError(`${name}: the engine closed`, undefined, true));
    const id = this.nextId++;
    return new Promise<StreamEnd>((resolve, reject) => {
      const abort = () => {
        if (!this.streams.delete(id)) return;
        this.post({ t: 'cancel', id });
        reject(call.signal.reason);
      };
      const done = () => call.signal.removeEventListener('abort', abort);
      this.streams.set(id, {
        name,
        onToken,
        resolve: (end) => (done(), resolve(end)),
        reject: (e) => (done(), reject(e)),
        tokens: 0,
      });
      call.signal.addEventListener('abort', abort, { once: true });
      const request = generationRequest(call, engine, this.imageTokens);
      const choices = choiceCount(call.body);
      this.post({ t: 'submit', id, replica, request, choices, promptField: promptField(call) });
    });
  }

  private reply(r: FleetReply): void {
    const s = this.streams.get(r.id);
    if (s === undefined) return; // aborted here already
    switch (r.t) {
      case 'token':
        s.tokens++;
        s.onToken(r.c === undefined ? { text: r.text } : { text: r.text, choice: r.c });
        return;
      case 'choice-end':
        s.onToken({ text: '', choice: r.c, finish: { reason: r.reason } });
        return;
      case 'finish':
        this.streams.delete(r.id);
        s.resolve({
          finishReason: r.reason,
          promptTokens: r.promptTokens,
          completionTokens: r.completionTokens,
          cachedTokens: r.cachedTokens,
          ...(r.ttftParts !== undefined && { ttftParts: r.ttftParts }),
          ...(r.choices !== undefined && { choices: r.choices }),
        });
        return;
      case 'rejected':
        this.streams.delete(r.id);
        s.reject(new UpstreamError(`${s.name}: ${r.reason}`, r.status, true, r.body));
        return;
      case 'crash':
        this.streams.delete(r.id);
        s.reject(
          new UpstreamError(`${s.name}: engine crashed mid-stream`, undefined, r.tokens === 0),
        );
        return;
      case 'closed':
        this.streams.delete(r.id);
        s.reject(new UpstreamError(`${s.name}: the engine closed`, undefined, r.tokens === 0));
        return;
    }
  }

  private failAll(why: string): void {
    this.closed = true;
    for (const [id, s] of this.streams) {
      this.streams.delete(id);
      s.reject(new UpstreamError(`${s.name}: ${why}`, undefined, s.tokens === 0));
    }
  }

  private post(m: FleetRequest): void {
    if (!this.closed || m.t === 'close') this.worker.postMessage(m);
  }
}
