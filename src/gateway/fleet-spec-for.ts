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
 * The fleet the gateway's policy sees. A prompt is staged in pieces where the engines keep a
 * prefix cache and chunk prefills: an HTTP backend is sent the pieces as requests, an embedded
 * engine is told them (`UpstreamCall.staged`).
 */
export function fleetSpecFor(
  engine: EngineConfig,
  profile: TimingProfile,
  model: string,
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
    stagesPrefill: engine.enablePrefixCaching && engine.chunkedPrefill,
  };
}
