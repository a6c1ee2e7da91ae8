/**
 * Session stickiness: the replica each session was last placed on, kept for `ttlMs` after its
 * last request and for at most `maxSessions` sessions (the least recently used forgotten
 * first). `hard`: a session's requests go back to its replica whenever the filters let them;
 * `soft`: only while that replica's score stays within `slackMs` of the best one, so a session
 * leaves an overloaded replica rather than queue behind it.
 */
import type { Ms } from '../request/units.ts';

export interface SessionPolicy {
  readonly mode: 'soft' | 'hard';
  readonly ttlMs: Ms;
  /** Soft mode: how much worse (in the router's score, ms for time scorers) the sticky replica may be. */
  readonly slackMs: Ms;
  readonly maxSessions: number;
}

export class SessionTable {
  readonly policy: SessionPolicy;
  private readonly byId = new Map<string, { replica: number; lastMs: Ms }>();

  constructor(policy: SessionPolicy) {
    this.policy = policy;
  }

  get size(): number {
    return this.byId.size;
  }

  /** The replica `session` sticks to at `nowMs`, or −1 (none, or expired). */
  replicaOf(session: string, nowMs: Ms): number {
    const e = this.byId.get(session);
    if (e === undefined) return -1;
    if (nowMs - e.lastMs > this.policy.ttlMs) {
      this.byId.delete(session);
      return -1;
    }
    return e.replica;
  }

  /** `session` was placed on `replica` at `nowMs`. */
  placed(session: string, replica: number, nowMs: Ms): void {
    this.byId.delete(session);
    this.byId.set(session, { replica, lastMs: nowMs });
    if (this.byId.size > this.policy.maxSessions) {
      this.byId.delete(this.byId.keys().next().value as string);
    }
  }

  /** `replica` is gone: its sessions go wherever they are placed next. */
  forgetReplica(replica: number): void {
    for (const [id, e] of this.byId) if (e.replica === replica) this.byId.delete(id);
  }
}
