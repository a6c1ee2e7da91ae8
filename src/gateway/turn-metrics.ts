/**
 * The Prometheus metrics of the turns refused requests keep (core/queueing/kept-turns.ts), read
 * at scrape time: how many are kept now, how many were kept, how many ended — claimed by their
 * retry, or run out with no client back — and the share of clients that come back, which is
 * what each turn counts for in the queue ahead of a new request.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { KeptTurns } from '../core/queueing/kept-turns.ts';

export class TurnMetrics {
  /** The pipeline's turns (set by the gateway); undefined under a policy that keeps none. */
  source: () => KeptTurns | undefined = () => undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    const turns = () => this.source();
    const kept: Gauge = new Gauge({
      name: 'goodput_kept_turns',
      help: 'Requests refused for their wait whose turn is kept now, waiting for their retry (admission retry_after.keep_turns).',
      registers,
      collect: () => kept.set(turns()?.size ?? 0),
    });
    const total: Counter = new Counter({
      name: 'goodput_kept_turns_total',
      help: 'Turns kept for requests refused for their wait (503 deadline with an Idempotency-Key): each told the Retry-After at which its retry is admitted.',
      registers,
      collect: () => {
        total.reset();
        total.inc(turns()?.keptTotal ?? 0);
      },
    });
    const ended: Counter<'outcome'> = new Counter({
      name: 'goodput_kept_turns_ended_total',
      help: 'Kept turns that ended, by outcome: claimed (the retry came back for it), lapsed (no retry within the grace after it).',
      labelNames: ['outcome'],
      registers,
      collect: () => {
        ended.reset();
        const t = turns();
        ended.inc({ outcome: 'claimed' }, t?.claimed ?? 0);
        ended.inc({ outcome: 'lapsed' }, t?.lapsed ?? 0);
      },
    });
    const shows: Gauge = new Gauge({
      name: 'goodput_kept_turn_return_ratio',
      help: 'Share of clients that came back for their kept turn (a moving average): what each kept turn counts for in the queue ahead of a new request.',
      registers,
      collect: () => shows.set(turns()?.returnRatio ?? 0),
    });
  }
}
