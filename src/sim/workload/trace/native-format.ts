/**
 * Goodput's own trace format, JSON Lines: `{"t_ms", "input_tokens", "output_tokens"}` and,
 * optionally, `"max_tokens"`, `"tenant"`, `"class"`, `"session"`, `"prefix_hashes"` (strings or
 * integers, one per full block of the prompt, chained), `"prefix_block_tokens"` (default 16) and
 * `"tool_calls"`: `[[after_tokens, wait_ms, result_tokens], …]`, an agent's tool calls in output
 * order — it pauses after that many output tokens, the tool takes wait_ms, and its result's
 * tokens join the context before generation goes on. `"timeout_ms"` is the client's deadline,
 * that long after the request arrives (the gateway's `x-goodput-timeout-ms`). `"n"` is the
 * choices it asks for (OpenAI's `n`, 1 to 128), each `output_tokens` long.
 * Because we own this format it is strict: an unknown key is an error, so a misspelt `"clas"`
 * cannot silently fall back to the default class.
 */
import type { SloClassName } from '../../../core/request/slo-classes.ts';
import {
  fail,
  jsonClass,
  jsonNumber,
  jsonText,
  timestamp,
  tokens,
  type LineRef,
} from './fields.ts';
import { jsonObject, tryJsonObject, type JsonRecord } from './json-line.ts';
import type { RowExtras, TraceFormat } from './trace-format.ts';
import { MAX_CHOICES, type ToolCall } from '../../../core/request/request.ts';

export const NATIVE_BLOCK_TOKENS = 16;

const KEYS = new Set([
  't_ms',
  'input_tokens',
  'output_tokens',
  'max_tokens',
  'tenant',
  'class',
  'session',
  'prefix_hashes',
  'prefix_block_tokens',
  'tool_calls',
  'timeout_ms',
  'n',
]);

export const nativeFormat: TraceFormat = {
  name: 'native',
  detect(firstLine) {
    const o = tryJsonObject(firstLine);
    return o !== undefined && 't_ms' in o;
  },
  open(file) {
    return (line, lineNo) => {
      const at = { file, line: lineNo };
      const o = jsonObject(at, line);
      for (const key in o) if (!KEYS.has(key)) fail(at, key, 'unknown field');
      const tMs = timestamp(at, 't_ms', jsonNumber(at, 't_ms', o.t_ms));
      const input = tokens(at, 'input_tokens', jsonNumber(at, 'input_tokens', o.input_tokens));
      const output = tokens(at, 'output_tokens', jsonNumber(at, 'output_tokens', o.output_tokens));
      const extras = readExtras(at, o, input);
      return extras
        ? { tMs, inputTokens: input, outputTokens: output, extras }
        : { tMs, inputTokens: input, outputTokens: output };
    };
  },
};

function readExtras(at: LineRef, o: JsonRecord, input: number): RowExtras | undefined {
  if (
    o.max_tokens === undefined &&
    o.tenant === undefined &&
    o.class === undefined &&
    o.session === undefined &&
    o.prefix_hashes === undefined &&
    o.tool_calls === undefined &&
    o.timeout_ms === undefined &&
    o.n === undefined
  ) {
    return undefined;
  }
  const extras: {
    maxTokens?: number;
    tenant?: string;
    sloClass?: SloClassName;
    session?: string;
    prefix?: { blockTokens: number; hashes: string[] };
    toolCalls?: ToolCall[];
    timeoutMs?: number;
    choices?: number;
  } = {};
  if (o.max_tokens !== undefined) {
    extras.maxTokens = tokens(at, 'max_tokens', jsonNumber(at, 'max_tokens', o.max_tokens));
  }
  if (o.tenant !== undefined) extras.tenant = jsonText(at, 'tenant', o.tenant);
  if (o.class !== undefined) extras.sloClass = jsonClass(at, 'class', o.class);
  if (o.session !== undefined) extras.session = jsonText(at, 'session', o.session);
  if (o.prefix_hashes !== undefined) {
    const block =
      o.prefix_block_tokens === undefined
        ? NATIVE_BLOCK_TOKENS
        : tokens(
            at,
            'prefix_block_tokens',
            jsonNumber(at, 'prefix_block_tokens', o.prefix_block_tokens),
          );
    const hashes = hashList(at, o.prefix_hashes);
    if (hashes.length * block > input) {
      fail(
        at,
        'prefix_hashes',
        `${hashes.length} blocks of ${block} tokens exceed input_tokens ${input}`,
      );
    }
    if (hashes.length > 0) extras.prefix = { blockTokens: block, hashes };
  }
  if (o.tool_calls !== undefined) extras.toolCalls = toolCalls(at, o.tool_calls);
  if (o.timeout_ms !== undefined) {
    const ms = jsonNumber(at, 'timeout_ms', o.timeout_ms);
    if (!(ms > 0)) fail(at, 'timeout_ms', `expected milliseconds above 0, got ${ms}`);
    extras.timeoutMs = ms;
  }
  if (o.n !== undefined) {
    const n = jsonNumber(at, 'n', o.n);
    if (!(Number.isSafeInteger(n) && n >= 1 && n <= MAX_CHOICES))
      fail(at, 'n', `expected an integer from 1 to ${MAX_CHOICES}, got ${n}`);
    if (n > 1) extras.choices = n;
  }
  return extras;
}

/** `[[after_tokens, wait_ms, result_tokens], …]`, in output order. */
function toolCalls(at: LineRef, value: unknown): ToolCall[] {
  const expected = 'an array of [after_tokens, wait_ms, result_tokens] triples, in output order';
  if (!Array.isArray(value)) fail(at, 'tool_calls', `expected ${expected}`);
  let last = 0;
  return value.map((v: unknown, i) => {
    const field = `tool_calls[${i}]`;
    if (!Array.isArray(v) || v.length !== 3) fail(at, field, `expected ${expected}`);
    const after = tokens(at, field, jsonNumber(at, field, v[0]));
    const waitMs = timestamp(at, field, jsonNumber(at, field, v[1]));
    const result = tokens(at, field, jsonNumber(at, field, v[2]), 0);
    if (after < last) fail(at, field, `after_tokens ${after} before the previous call's ${last}`);
    last = after;
    return { afterTokens: after, waitMs, resultTokens: result };
  });
}

function hashList(at: LineRef, value: unknown): string[] {
  if (!Array.isArray(value)) fail(at, 'prefix_hashes', 'expected an array of strings or integers');
  return value.map((h: unknown, i) => {
    if (typeof h === 'string' && h !== '') return h;
    if (typeof h === 'number' && Number.isSafeInteger(h)) return String(h);
    return fail(
      at,
      'prefix_hashes',
      `item ${i}: expected a string or an integer, got ${JSON.stringify(h)}`,
    );
  });
}
