/**
 * Every routing filter, registered once by name. The dispatch strategies put `avoid`, `held`,
 * `flow-fit` and, for a disaggregated fleet, `prefill-fit` in front of a router's own
 * (`../dispatch/strategies.ts`).
 */
import { candidateOf } from './flow-control.ts';
import type { Filter } from './route.ts';
import { serves } from '../fleet/replica-snapshot.ts';

/** A failover does not go back where its last attempt failed — unless nowhere else is ready. */
const avoid: Filter = {
  name: 'avoid',
  description: 'drops the replica a retried request failed on, while another is ready',
  filter(r, replicas, _ctx, out) {
    const bad = r.avoid ?? -1;
    for (const x of replicas) if (x.index !== bad || replicas.length === 1) out.push(x);
  },
};

/** A replica held for a long prompt takes no other new work until that prompt fits there. */
const held: Filter = {
  name: 'held',
  description: 'drops replicas held for another request (a long prompt waiting for them to drain)',
  filter(r, replicas, ctx, out) {
    for (const x of replicas) {
      const h = ctx.heldFor(x.index);
      if (h === undefined || h === r) out.push(x);
    }
  },
};

/**
 * Flow control (`flow-control.ts`): the replicas whose next step stays within their streams'
 * gap objectives with this prompt added; failing those, the ones it may stall acceptably.
 */
const flowFit: Filter = {
  name: 'flow-fit',
  description:
    'keeps the replicas flow control lets take it now: fast ones, or else acceptably slow ones',
  filter(r, replicas, ctx, out) {
    let fast = false;
    for (const x of replicas) {
      ctx.ledger.resize(x.index + 1);
      const c = candidateOf(r, ctx.hits[x.index]);
      const kind = ctx.flow.fit(ctx.ledger.replicas[x.index], c, x, ctx.nowMs).kind;
      if (kind === 'fast') {
        // The first fast one clears the slow ones kept so far: only fast ones from here on.
        if (!fast) out.length = 0;
        fast = true;
        out.push(x);
      } else if (kind === 'slow' && !fast) out.push(x);
    }
  },
};

/**
 * Disaggregated serving: the prefill pool feeding a replica has at most this many of its steps
 * of prompts queued before it takes another — enough to start its next step at once.
 */
export const PREFILL_BACKLOG_STEPS = 2;

/**
 * Disaggregated serving: a replica whose prefill pool already has its next steps' prompts
 * queued takes no new request, so the queue stays in the control plane — in priority and fair
 * order, and seen by admission's wait model — rather than in the prefill engines' FIFO.
 */
const prefillFit: Filter = {
  name: 'prefill-fit',
  description:
    "drops replicas whose prefill pool (disaggregated serving) has its next steps' prompts queued",
  filter(_r, replicas, _ctx, out) {
    for (const x of replicas) {
      if ((x.prefillBacklogSteps ?? 0) < PREFILL_BACKLOG_STEPS) out.push(x);
    }
  },
};

/** A request for a LoRA adapter goes only where that adapter is served. */
const servable: Filter = {
  name: 'servable',
  description: 'drops replicas that do not serve the LoRA adapter the request names',
  filter(r, replicas, _ctx, out) {
    const adapter = r.req.adapter;
    for (const x of replicas) if (serves(x, adapter)) out.push(x);
  },
};

/** Scratch for `flow-fit-any`: whether the survivor at each position fits fast. */
const fastAt: boolean[] = [];

/**
 * Flow control with its preference weighed rather than absolute, for a router whose scores
 * price a slow step's stall themselves (the decode time it is expected to waste beside it): the
 * fast replicas, and the acceptably slow ones whose cache holds more of the prompt than any fast
 * one's — a stall is worth taking only for the prefill it saves. A slow replica that saves
 * nothing would spend its streams' tolerance of slow gaps, which the long prompts to come need,
 * on a prefill a fast replica computes without a stall. With no fast replica, every slow one.
 */
const flowFitAny: Filter = {
  name: 'flow-fit-any',
  description:
    'keeps the replicas flow control lets take it now: fast ones, and slow ones whose cache holds more of the prompt than any fast one',
  filter(r, replicas, ctx, out) {
    let bestFastHit = -1;
    for (const x of replicas) {
      ctx.ledger.resize(x.index + 1);
      const hit = ctx.hits[x.index];
      const kind = ctx.flow.fit(
        ctx.ledger.replicas[x.index],
        candidateOf(r, hit),
        x,
        ctx.nowMs,
      ).kind;
      if (kind === 'no') continue;
      if (kind === 'fast') bestFastHit = Math.max(bestFastHit, hit);
      fastAt[out.length] = kind === 'fast';
      out.push(x);
    }
    if (bestFastHit < 0) return;
    let kept = 0;
    for (let i = 0; i < out.length; i++) {
      if (fastAt[i] || ctx.hits[out[i].index] > bestFastHit) out[kept++] = out[i];
    }
    out.length = kept;
  },
};

export const FILTERS: Readonly<Record<string, Filter>> = {
  [flowFitAny.name]: flowFitAny,
  [servable.name]: servable,
  [avoid.name]: avoid,
  [held.name]: held,
  [flowFit.name]: flowFit,
  [prefillFit.name]: prefillFit,
};
