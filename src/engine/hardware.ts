/**
 * Model and GPU shapes the engine needs: enough to size weights and KV cache and to scale
 * timing. Numbers are the published architecture parameters and datasheet figures.
 */
import type { Bytes } from '../core/request/units.ts';

export interface ModelSpec {
  readonly name: string;
  readonly layers: number;
  readonly hidden: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly ffn: number;
  readonly vocab: number;
  /** Parameter count, for weight memory. */
  readonly params: number;
  readonly dtypeBytes: number;
  /** The context the model was trained for (its max_position_embeddings, as vLLM reads it). */
  readonly maxModelLen: number;
  /** Another model whose fitted timing profiles this one uses (same shapes per operator). */
  readonly timingAs?: string;
}

export interface GpuSpec {
  readonly name: string;
  readonly memoryBytes: Bytes;
  /** HBM bandwidth, bytes per ms. */
  readonly hbmBytesPerMs: number;
  /** Host link (PCIe) bandwidth for KV swap, bytes per ms. */
  readonly hostLinkBytesPerMs: number;
}

const GiB = 1024 ** 3;

const LLAMA_3_8B: ModelSpec = {
  name: 'llama-3-8b',
  layers: 32,
  hidden: 4096,
  heads: 32,
  kvHeads: 8,
  headDim: 128,
  ffn: 14336,
  vocab: 128256,
  params: 8.03e9,
  dtypeBytes: 2,
  maxModelLen: 8192,
};

const LLAMA_3_70B: ModelSpec = {
  name: 'llama-3-70b',
  layers: 80,
  hidden: 8192,
  heads: 64,
  kvHeads: 8,
  headDim: 128,
  ffn: 28672,
  vocab: 128256,
  params: 70.6e9,
  dtypeBytes: 2,
  maxModelLen: 8192,
};

export const MODELS: Readonly<Record<string, ModelSpec>> = {
  'llama-3-8b': LLAMA_3_8B,
  'llama-3-70b': LLAMA_3_70B,
  // Llama 3.1: the Llama 3 architecture with RoPE scaled to a 128K context. Per-operator
  // timing is Llama 3's; attention is evaluated over the longer context.
  'llama-3.1-8b': {
    ...LLAMA_3_8B,
    name: 'llama-3.1-8b',
    maxModelLen: 131_072,
    timingAs: 'llama-3-8b',
  },
  'llama-3.1-70b': {
    ...LLAMA_3_70B,
    name: 'llama-3.1-70b',
    maxModelLen: 131_072,
    timingAs: 'llama-3-70b',
  },
  'llama-2-7b': {
    name: 'llama-2-7b',
    layers: 32,
    hidden: 4096,
    heads: 32,
    kvHeads: 32,
    headDim: 128,
    ffn: 11008,
    vocab: 32000,
    params: 6.74e9,
    dtypeBytes: 2,
    maxModelLen: 4096,
  },
  'llama-2-70b': {
    name: 'llama-2-70b',
    layers: 80,
    hidden: 8192,
    heads: 64,
    kvHeads: 8,
    headDim: 128,
    ffn: 28672,
    vocab: 32000,
    params: 68.98e9,
    dtypeBytes: 2,
    maxModelLen: 4096,
  },
};

export const GPUS: Readonly<Record<string, GpuSpec>> = {
  a100: { name: 'a100', memoryBytes: 80 * GiB, hbmBytesPerMs: 2.039e9, hostLinkBytesPerMs: 25e6 },
  h100: { name: 'h100', memoryBytes: 80 * GiB, hbmBytesPerMs: 3.35e9, hostLinkBytesPerMs: 50e6 },
};

/** KV bytes one token occupies across the whole replica: 2 (K and V) · layers · kv_heads · head_dim · dtype. */
export function kvBytesPerToken(model: ModelSpec): Bytes {
  return 2 * model.layers * model.kvHeads * model.headDim * model.dtypeBytes;
}

export function weightBytes(model: ModelSpec): Bytes {
  return model.params * model.dtypeBytes;
}
