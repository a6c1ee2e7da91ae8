/**
 * The embedded fleet's own thread (`goodput serve --fleet-thread`): the simulated engines step
 * on this thread's event loop, so their time is a GPU's — it does not stretch when the
 * gateway's loop is busy (a flood of connections can keep Node polling sockets for seconds
 * before any timer fires). The gateway
 * talks to it in messages (`embedded-fleet-messages.ts`); tokens go back one message per engine
 * step, not per token.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { buildEngineConfig, buildEngineProfile, type EngineSpec } from '../engine/engine-spec.ts';
import type { Generation } from '../engine-server/generation.ts';
import { followChoices, submitChoices } from '../engine-server/choices.ts';
import { simulatedFleet } from '../engine-server/simulated-fleet.ts';
import { choicesEnd, engineRefusal } from './embedded-backend.ts';
import type { FinishReason } from '../openai/responses.ts';
import { wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import type {
  FleetReply,
  FleetRequest,
  FleetSetup,
  ReplicaLoadMessage,
} from './embedded-fleet-messages.ts';

if (parentPort === null) throw new Error('embedded-fleet-worker runs as a worker thread');
const port = parentPort;
const setup = workerData as FleetSetup;
const spec: EngineSpec = setup.spec;
const timers = wallTimers(wallClock);
const engines = simulatedFleet({
  config: buildEngineConfig(spec),
  profile: buildEngineProfile(spec),
  replicas: setup.replicas,
  seed: setup.seed,
  clock: wallClock,
  timers,
  adapterReplicas: setup.adapterReplicas,
});
const running = new Map<number, readonly Generation[]>();

/** Tokens and ends gathered while an engine step runs, sent once it is over. */
let pending: FleetReply[] = [];
let flushing = false;
function send(m: FleetReply): void {
  pending.push(m);
  if (flushing) return;
  flushing = true;
  // Due now: it runs once the engine step that made these events is over, so one step's
  // tokens go together.
  timers.at(wallClock.now(), () => {
    flushing = false;
    const batch = pending;
    pending = [];
    port.postMessage({ t: 'batch', replies: batch, loads: loads() });
  });
}

function loads(): ReplicaLoadMessage[] {
  return engines.map((e) => {
    const l = e.load();
    return {
      running: l.running,
      waiting: l.waiting,
      kvUsage: l.kvTotalBlocks > 0 ? l.kvUsedBlocks / l.kvTotalBlocks : 1,
      preemptions: e.stats().preemptions,
      ...(l.loras === undefined ? {} : { loras: [...l.loras] }),
    };
  });
}

async function serve(id: number, gens: readonly Generation[]): Promise<void> {
  const several = gens.length > 1;
  try {
    const end = await followChoices(gens, {
      token: (c, text) => send(c === 0 ? { t: 'token', id, text } : { t: 'token', id, text, c }),
      finished: (c, ev) => {
        if (several) send({ t: 'choice-end', id, c, reason: ev.reason });
      },
    });
    if (end.end === 'finished') {
      const whole = choicesEnd(gens, end.finishes);
      send({
        t: 'finish',
        id,
        reason: whole.finishReason as FinishReason,
        promptTokens: whole.promptTokens,
        completionTokens: whole.completionTokens,
        cachedTokens: whole.cachedTokens ?? 0,
        ttftParts: whole.ttftParts,
        ...(several ? { choices: gens.length } : {}),
      });
    } else {
      send({ t: end.end, id, tokens: end.tokens });
    }
  } finally {
    running.delete(id);
    for (const gen of gens) gen.cancel();
  }
}

port.on('message', (m: FleetRequest) => {
  switch (m.t) {
    case 'submit': {
      const engine = engines[m.replica];
      const submitted = submitChoices(engine, m.request, m.choices);
      if (!submitted.ok) {
        const { reason } = submitted;
        const answer = engineRefusal(reason, m.request, m.promptField, engine, m.choices);
        send({ t: 'rejected', id: m.id, reason, ...answer });
        return;
      }
      running.set(m.id, submitted.generations);
      void serve(m.id, submitted.generations);
      return;
    }
    case 'cancel':
      for (const gen of running.get(m.id) ?? []) gen.cancel();
      return;
    case 'close':
      for (const e of engines) e.close();
      port.close();
      return;
  }
});
port.postMessage({ t: 'ready', loads: loads() });
