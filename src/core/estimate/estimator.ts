/**
 * The demand estimator: turns a request and the fleet's current load into its predicted cost —
 * prompt work, output p50/p90 learned online per class and tenant, KV to reserve, total work.
 * A prefix-cache hit counts only as the router expects it: the tokens the best-placed ready
 * replica's cache is expected to hold (0 for a router that keeps no prefix index), so the
 * predicted prefill and TTFT are of what must be computed. KV is reserved for the whole prompt.
 */
import type { LlmRequest } from '../request/request.ts';
import type { SloClass } from '../request/slo-classes.ts';
import type { Ms, Tokens } from '../request/units.ts';
import {
  choicesOf,
  reservedKvTokens,
  type Demand,
  type OutputPrediction,
} from '../request/demand.ts';
import type { FleetLoad } from './fleet-load.ts';
import { seqChunkTokens, type FleetSpec } from '../fleet/fleet-spec.ts';
import type { OutputLengthModel } from './output-length-model.ts';

/**
 * Prefill time of a prompt alone on a replica, all its chunks, as it is sent beside streams of
 * `itlSloMs`: whole, or staged in pieces that share steps of `stepMs` with the replica's work
 * (`FlowControl.servedPrefillMs`). `seqs`: its choices (`n`).
 */
export type PrefillTime = (promptTokens: Tokens, itlSloMs: Ms, stepMs: Ms, seqs: number) => Ms;

/** The most tokens this request may generate: its own cap, its class's, and the context left. */
export function outputCap(req: LlmRequest, cls: SloClass, maxModelLen: Tokens): Tokens {
  return Math.max(
    1,
    Math.min(
      req.maxTokens ?? Infinity,
      cls.maxOutputTokens ?? Infinity,
      maxModelLen - req.inputTokens,
    ),
  );
}

/**
 * `o`, no length of it under what `req` must generate (its `minTokens`, within `cap`): a reply
 * that ignores EOS runs to its cap, however short its class's replies are.
 */
function atLeast(o: OutputPrediction, req: LlmRequest, cap: Tokens): OutputPrediction {
  const floor = Math.min(cap, req.minTokens ?? 0);
  if (floor <= o.p10) return o;
  const up = (x: Tokens) => Math.max(x, floor);
  const reserve = o.reserve === undefined ? {} : { reserve: up(o.reserve) };
  return { ...o, p10: floor, p50: up(o.p50), p90: up(o.p90), ...reserve };
}

export function estimateDemand(
  req: LlmRequest,
  cls: SloClass,
  fleet: FleetLoad,
  outputs: OutputLengthModel,
  prefillTime: PrefillTime,
  expectedHitTokens: Tokens = 0,
): Demand {
  const spec = fleet.spec;
  const cap = outputCap(req, cls, spec.maxModelLen);
  const output = atLeast(outputs.predict(cls.name, req.tenant, cap, req.reasoningEffort), req, cap);
  const uncached = req.inputTokens - expectedHitTokens;
  const itl = cls.objectives.itlP99Ms ?? Infinity;
  const prefillMs = prefillTime(uncached, itl, fleet.stepMs, choicesOf(req));
  // Disaggregated serving: the prompt is computed in the prefill pool, behind what waits
  // there, and its KV crosses to the decode replica before that replica's first step.
  const transfer = spec.kvTransferMs;
  const handoverMs = transfer === undefined ? 0 : fleet.prefillQueueMs + transfer(req.inputTokens);
  const kvTokens = reservedKvTokens(req, output);
  const batch = Math.max(1, fleet.decodeBatch);
  return {
    inputTokens: req.inputTokens,
    prefixHitTokens: expectedHitTokens,
    prefillMs,
    prefillSteps: Math.max(1, Math.ceil(uncached / seqChunkTokens(spec))),
    firstDecodeMs: fleet.decodeStepMs,
    handoverMs,
    output,
    kvTokens,
    kvBytes: kvTokens * spec.kvBytesPerToken,
    // GPU time the request is answerable for: its prefill plus its share of each decode step.
    workP90Ms: prefillMs + (choicesOf(req) * output.p90 * fleet.decodeStepMs) / batch,
  };
}

/**
 * What a request is charged against its tenant's token quota at the door: its prompt plus its
 * output cap — or, when it set none, the output its class and tenant are predicted to reach at
 * p90, as the memory gate reserves — for each of its choices.
 */
export function tenantCharge(
  req: LlmRequest,
  cls: SloClass,
  spec: FleetSpec,
  outputs: OutputLengthModel,
): Tokens {
  const cap = outputCap(req, cls, spec.maxModelLen);
  const output =
    req.maxTokens ??
    atLeast(outputs.predict(cls.name, req.tenant, cap, req.reasoningEffort), req, cap).p90;
  return req.inputTokens + choicesOf(req) * output;
}
