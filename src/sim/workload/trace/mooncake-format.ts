/**
 * Mooncake traces (Qin et al., FAST 2025): JSON Lines of
 * `{"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [ints]}`. Each hash id
 * names one 512-token block of the prompt, chained (equal ids mean an equal prefix). Mooncake
 * lists the prompt's last, partial block too; only full blocks are kept, because a prefix cache
 * holds only full blocks and `PrefixBlocks` promises `blockTokens` per hash. Other keys are
 * ignored, as published traces vary in what else they carry.
 */
import type { PrefixBlocks } from '../../../core/request/request.ts';
import { fail, jsonNumber, timestamp, tokens } from './fields.ts';
import { jsonObject, tryJsonObject } from './json-line.ts';
import type { TraceFormat } from './trace-format.ts';

export const MOONCAKE_BLOCK_TOKENS = 512;

export const mooncakeFormat: TraceFormat = {
  name: 'mooncake',
  detect(firstLine) {
    const o = tryJsonObject(firstLine);
    return o !== undefined && 'timestamp' in o && 'input_length' in o;
  },
  open(file) {
    // Hash ids repeat across requests that share a prefix; one string per id saves memory.
    const names = new Map<number, string>();
    return (line, lineNo) => {
      const at = { file, line: lineNo };
      const o = jsonObject(at, line);
      const tMs = timestamp(at, 'timestamp', jsonNumber(at, 'timestamp', o.timestamp));
      const input = tokens(at, 'input_length', jsonNumber(at, 'input_length', o.input_length));
      const output = tokens(at, 'output_length', jsonNumber(at, 'output_length', o.output_length));
      const ids = o.hash_ids;
      if (ids === undefined) return { tMs, inputTokens: input, outputTokens: output };
      if (!Array.isArray(ids)) fail(at, 'hash_ids', 'expected an array of integers');
      const full = Math.min(ids.length, Math.floor(input / MOONCAKE_BLOCK_TOKENS));
      const hashes: string[] = [];
      for (let i = 0; i < ids.length; i++) {
        const id: unknown = ids[i];
        if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) {
          fail(at, 'hash_ids', `item ${i}: expected an integer ≥ 0, got ${JSON.stringify(id)}`);
        }
        if (i >= full) continue;
        let name = names.get(id);
        if (name === undefined) names.set(id, (name = String(id)));
        hashes.push(name);
      }
      if (hashes.length === 0) return { tMs, inputTokens: input, outputTokens: output };
      const prefix: PrefixBlocks = { blockTokens: MOONCAKE_BLOCK_TOKENS, hashes };
      return { tMs, inputTokens: input, outputTokens: output, extras: { prefix } };
    };
  },
};
