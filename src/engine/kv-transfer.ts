/**
 * What moving a prompt's KV from a prefill instance to a decode instance costs (disaggregated
 * serving, as vLLM's NIXL connector or Dynamo's KV transfer do it): a fixed set-up time (the
 * handshake, block-table exchange, completion notice) plus the bytes over the link. Each GPU of
 * a tensor-parallel group sends its own shard over its own NIC, so the link is per GPU and the
 * shards move in parallel.
 */
import { ConfigError } from '../core/errors.ts';
import type { Ms, Tokens } from '../core/request/units.ts';
import { kvBytesPerToken, type ModelSpec } from './hardware.ts';

export interface KvLink {
  /** Gigabits per second, per GPU (one RDMA NIC each on an H100 node: 400). */
  readonly gbps: number;
  /** Fixed time per transfer, whatever its size. */
  readonly setupMs: Ms;
}

/**
 * One 400 Gb/s RDMA NIC per GPU (ConnectX-7 on H100 nodes); 2 ms of set-up — an order of
 * magnitude below a prefill, above an NVLink copy.
 */
export const DEFAULT_KV_LINK: KvLink = { gbps: 400, setupMs: 2 };

/** The slowest link, Gb/s (1 Mb/s): a model's whole KV cache then crosses in hours, not years. */
export const MIN_KV_LINK_GBPS = 0.001;

export function checkKvLink(link: KvLink): KvLink {
  if (!(link.gbps >= MIN_KV_LINK_GBPS && Number.isFinite(link.gbps))) {
    throw new ConfigError(
      'kvLink.gbps',
      `a number of gigabits per second ≥ ${MIN_KV_LINK_GBPS}`,
      link.gbps,
    );
  }
  if (!(link.setupMs >= 0 && Number.isFinite(link.setupMs))) {
    throw new ConfigError('kvLink.setupMs', 'a non-negative number of ms', link.setupMs);
  }
  return link;
}

/** Time to move `tokens` tokens of `model`'s KV between two groups of `tp` GPUs. */
export function kvTransferMs(tokens: Tokens, model: ModelSpec, tp: number, link: KvLink): Ms {
  const bytesPerMs = (link.gbps * 1e9) / 8 / 1000;
  return link.setupMs + (tokens * kvBytesPerToken(model)) / (bytesPerMs * tp);
}
