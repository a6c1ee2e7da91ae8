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
import { simulatedFleet } from '../engine-server/simulated-fleet.ts';
import { engineRefusal } from './embedded-backend.ts';
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
const running = new Map<number, Generation>();

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

async function serve(id: number, gen: Generation): Promise<void> {
  let tokens = 0;
  try {
    for await (const ev of gen) {
      if (ev.type === 'token') {
        tokens++;
        send({ t: 'token', id, text: ev.text });
      } else if (ev.type === 'finish') {
        send({
          t: 'finish',
          id,
          reason: ev.reason,
          promptTokens: gen.promptTokens,
          completionTokens: ev.completionTokens,
          cachedTokens: gen.cachedTokens,
          ttftParts: gen.ttftParts(),
        });
        return;
      } else {
        send({ t: 'crash', id, tokens });
        return;
      }
    }
    send({ t: 'closed', id, tokens });
  } finally {
    running.delete(id);
    gen.cancel();
  }
}

port.on('message', (m: FleetRequest) => {
  switch (m.t) {
    case 'submit': {
      const engine = engines[m.replica];
      const submitted = engine.submit(m.request);
      if (!submitted.ok) {
        const { reason } = submitted;
        const answer = engineRefusal(reason, m.request, m.promptField, engine);
        send({ t: 'rejected', id: m.id, reason, ...answer });
        return;
      }
      running.set(m.id, submitted.generation);
      void serve(m.id, submitted.generation);
      return;
    }
    case 'cancel':
      running.get(m.id)?.cancel();
      return;
    case 'close':
      for (const e of engines) e.close();
      port.close();
      return;
  }
});
port.postMessage({ t: 'ready', loads: loads() });
