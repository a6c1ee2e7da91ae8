/**
 * One benchmark run against a live OpenAI-compatible server: the workload the simulator would
 * replay (same flags, same seed, same requests), sent open-loop, each call timed, summarised
 * with vLLM's definitions. The model is asked of the server (`GET /v1/models`) unless given.
 * Only a server that cannot even say which model it serves stops a run before it starts; every
 * failure after that is a record, so a run always ends with a result.
 */
import http from 'node:http';
import https from 'node:https';
import { ConfigError } from '../core/errors.ts';
import type { Clock } from '../core/ports/clock.ts';
import type { Timers } from '../core/ports/timers.ts';
import { SeededRng } from '../runtime/seeded-rng.ts';
import { buildWorkload, type Workload } from '../sim/workload/build-workload.ts';
import type { WorkloadOptions } from '../sim/workload/workload-options.ts';
import { benchCall, type BenchEndpoint } from './bench-call.ts';
import { benchMetrics, type BenchMetrics } from './bench-metrics.ts';
import type { CallRecord } from './call-record.ts';
import type { GoodputSlo } from './goodput-spec.ts';
import { runOpenLoop } from './open-loop.ts';
import { streamCall } from './stream-call.ts';

export interface BenchSpec {
  /** The server's root (`serverBaseUrl`): `/v1/...` is added. */
  readonly baseUrl: string;
  readonly apiKey?: string;
  readonly tenantKeys?: ReadonlyMap<string, string>;
  /** Undefined: the first model the server lists. */
  readonly model?: string;
  readonly endpoint: BenchEndpoint;
  readonly workload: WorkloadOptions;
  readonly seed: number;
  readonly sendClass: boolean;
  /** Responses API: ask the server to keep each response (`store: true`). */
  readonly keepResponses?: boolean;
  readonly maxConcurrency?: number;
  readonly slo?: GoodputSlo;
  readonly percentiles: readonly number[];
  readonly timeoutMs: number;
}

export interface BenchRun {
  readonly model: string;
  readonly workload: Workload;
  readonly records: readonly CallRecord[];
  readonly startMs: number;
  readonly endMs: number;
  readonly offered: number;
  readonly metrics: BenchMetrics;
}

export interface BenchHooks {
  readonly clock: Clock;
  readonly timers: Timers;
  readonly onEnd?: (ended: number, record: CallRecord) => void;
  /** Interrupts the run: nothing more is sent, and calls still running end `interrupted`. */
  readonly stop?: AbortSignal;
}

export async function runBench(spec: BenchSpec, hooks: BenchHooks): Promise<BenchRun> {
  const rng = new SeededRng(spec.seed);
  const workload = buildWorkload(spec.workload, rng.fork('workload'));
  if (spec.endpoint === 'responses') refuseChoices(workload);
  // A gateway with keys lists its models to any of them: a run with tenants' keys alone asks with one.
  const listKey = spec.apiKey ?? spec.tenantKeys?.values().next().value;
  const { clock, timers, stop } = hooks;
  const model = spec.model ?? (await servedModel(spec.baseUrl, listKey, { clock, timers, stop }));
  const prompts = rng.fork('prompts');
  const shape = { ...spec, model };
  const ctx = { baseUrl: spec.baseUrl, clock, timers, timeoutMs: spec.timeoutMs, stop };
  let offered = 0;
  const run = await runOpenLoop(
    workload.requests,
    (req, dueMs) => {
      offered++;
      const who = {
        id: req.id,
        tenant: req.tenant,
        sloClass: req.sloClass,
        dueMs,
        promptTokens: req.inputTokens,
      };
      return streamCall(ctx, who, benchCall(req, shape, prompts));
    },
    { clock, timers, maxConcurrency: spec.maxConcurrency, onEnd: hooks.onEnd, stop },
  );
  const metrics = benchMetrics({ ...run, offered, slo: spec.slo, percentiles: spec.percentiles });
  return { model, workload, ...run, offered, metrics };
}

/** The Responses API has no `n`: a workload of several choices cannot be asked of it. */
function refuseChoices(workload: Workload): void {
  const why = '1 with --endpoint responses (the Responses API has no n)';
  const d = workload.describe;
  if ((d.choices ?? 1) > 1) throw new ConfigError('--n', why, d.choices);
  if (d.kind === 'trace' && (d.maxChoices ?? 1) > 1)
    throw new ConfigError(
      '--endpoint',
      `completions or chat for a trace whose rows ask n up to ${d.maxChoices}`,
      'responses',
    );
}

/** The run was interrupted before it sent anything: there is no result to tell. */
export class BenchInterrupted extends Error {
  constructor(when: string) {
    super(`interrupted ${when}: nothing was sent`);
    this.name = 'BenchInterrupted';
  }
}

/** How long `GET /v1/models` has for its whole answer, however the server trickles it. */
const MODELS_DEADLINE_MS = 10_000;
/** The most of its answer read: a list of models is kilobytes. */
const MODELS_MAX_CHARS = 4 * 1024 * 1024;

/**
 * The first model `GET /v1/models` lists; a server that cannot answer it — within
 * `MODELS_DEADLINE_MS` for the whole answer, whole, as JSON — is a ConfigError on `--url`. The
 * run interrupted meanwhile ends it at once.
 */
export async function servedModel(
  baseUrl: string,
  apiKey: string | undefined,
  hooks: Pick<BenchHooks, 'clock' | 'timers' | 'stop'>,
): Promise<string> {
  const url = new URL(`${baseUrl}/v1/models`);
  const why = (detail: string) =>
    new ConfigError(
      '--url',
      `a server that lists its models (or give --model)`,
      `${baseUrl}: ${detail}`,
    );
  const body = await new Promise<string>((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).get(
      url,
      { headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (s: string) => {
          text += s;
          if (text.length > MODELS_MAX_CHARS)
            fail(`GET /v1/models answered past ${MODELS_MAX_CHARS} characters`);
        });
        res.on('end', () =>
          res.statusCode === 200
            ? settle(() => resolve(text))
            : fail(`GET /v1/models answered ${res.statusCode}`),
        );
        // Cut before its end: no 'end' comes.
        res.on('close', () => {
          if (!res.complete) fail('GET /v1/models: the answer was cut before its end');
        });
      },
    );
    let settled = false;
    const deadline = hooks.timers.at(hooks.clock.now() + MODELS_DEADLINE_MS, () =>
      fail(`GET /v1/models: no whole answer within ${MODELS_DEADLINE_MS / 1000} s`),
    );
    const interrupted = () => {
      settle(() => reject(new BenchInterrupted('before the server listed its models')));
      req.destroy();
    };
    function settle(then: () => void) {
      if (settled) return;
      settled = true;
      deadline.cancel();
      hooks.stop?.removeEventListener('abort', interrupted);
      then();
    }
    function fail(detail: string) {
      settle(() => reject(why(detail)));
      req.destroy();
    }
    if (hooks.stop?.aborted) interrupted();
    else hooks.stop?.addEventListener('abort', interrupted, { once: true });
    req.on('error', (e: NodeJS.ErrnoException) => fail(e.code ?? e.message));
  });
  let id: unknown;
  try {
    id = (JSON.parse(body) as { data?: { id?: unknown }[] } | null)?.data?.[0]?.id;
  } catch {
    throw why('GET /v1/models did not answer JSON');
  }
  if (typeof id !== 'string') throw why('GET /v1/models listed no model');
  return id;
}
