/**
 * The fleet facts a gateway's policy sees, from the engine its backends run (or are assumed to
 * run) and its timing profile.
 */
import type { FleetSpec } from '../core/fleet/fleet-spec.ts';
import type { EngineConfig } from '../engine/engine-types.ts';
import { kvBytesPerToken } from '../engine/hardware.ts';
import { resolveGpuBlocks } from '../engine/kv-capacity.ts';
import type { TimingProfile } from '../engine/timing/profile.ts';

/**
 * The fleet the gateway's policy sees. `embedded`: its engines run in process, and are told a
 * staged prompt's pieces as the simulator's are; to HTTP backends the gateway sends no pieces.
 */
export function fleetSpecFor(
  engine: EngineConfig,
  profile: TimingProfile,
  model: string,
  embedded = false,
): FleetSpec {
  return {
    model,
    adapters: engine.loraModules ?? [],
    maxLoras: engine.maxLoras,
    adapterLoadMs: engine.loraLoadMs,
    maxModelLen: engine.maxModelLen,
    maxBatchedTokens: engine.maxBatchedTokens,
    longPrefillTokenThreshold: engine.longPrefillTokenThreshold,
    maxNumSeqs: engine.maxNumSeqs,
    kvBytesPerToken: kvBytesPerToken(engine.model),
    replicaKvTokens: resolveGpuBlocks(engine) * engine.blockSize,
    stepTime: profile,
    stagesPrefill: embedded && engine.enablePrefixCaching && engine.chunkedPrefill,
  };
}
