/**
 * `goodput engine`: a simulated vLLM-compatible server — the engine model on the wall clock
 * behind OpenAI's API and vLLM's metrics, with injectable faults. Flags follow vLLM's names.
 * Main rule: it prints the URL it serves once listening and shuts down cleanly on SIGINT/SIGTERM,
 * and, started by a gateway's engine pool (over an IPC channel), when that gateway goes, however
 * it goes: a pool's engine never outlives its gateway.
 */
import { Command } from 'commander';
import { ConfigError } from '../core/errors.ts';
import { ENGINE_SERVER_DEFAULTS as D } from '../engine-server/engine-options.ts';
import {
  addEngineFlags,
  engineSpecFromFlags,
  imageTokensOption,
  maxBodyOption,
  mebibytes,
} from './engine-flags.ts';
import { serveEngine } from '../engine-server/serve.ts';
import { listenRefused } from '../gateway/http/listeners.ts';
import {
  listenHost,
  nonEmpty,
  nonNegativeInt,
  nonNegativeNumber,
  portNumber,
} from './parse-flags.ts';
import { wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';
import type { ImageTokens } from '../openai/image-size.ts';

function rate(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !(n >= 0 && n <= 1))
      throw new ConfigError(flag, 'a number in [0, 1]', value);
    return n;
  };
}

export function engineCommand(): Command {
  return addEngineFlags(new Command('engine'))
    .description(
      'serve a simulated vLLM-compatible engine (OpenAI API, vLLM metrics) on the wall clock',
    )
    .option('--port <n>', 'port to listen on (0: any free port)', portNumber('--port'), 8000)
    .option('--host <host>', 'address to bind', listenHost('--host'), '127.0.0.1')
    .option(
      '--api-key <keys...>',
      "keys /v1 requests must send as 'Authorization: Bearer KEY', as vLLM's (default: $VLLM_API_KEY; none: open)",
    )
    .option(
      '--served-model-name <name>',
      'name /v1/models lists and requests must use (default: --model)',
      nonEmpty('--served-model-name'),
    )
    .addOption(imageTokensOption())
    .addOption(maxBodyOption())
    .option('--seed <n>', 'seed for output lengths and faults', nonNegativeInt('--seed'), D.seed)
    .option(
      '--fail-rate <f>',
      'fraction of requests answered 500 before any token',
      rate('--fail-rate'),
      0,
    )
    .option(
      '--stall-rate <f>',
      'fraction of streams that pause once half-way',
      rate('--stall-rate'),
      0,
    )
    .option('--stall-ms <ms>', 'how long a stall lasts', nonNegativeNumber('--stall-ms'), 1000)
    .option(
      '--startup-delay <s>',
      'seconds before it listens, as a real engine loads weights and captures graphs first',
      nonNegativeNumber('--startup-delay'),
      0,
    )
    .option(
      '--crash-rate <f>',
      'fraction of streams cut half-way (connection destroyed)',
      rate('--crash-rate'),
      0,
    )
    .option(
      '--shutdown-timeout <s>',
      "vLLM's: on SIGTERM, refuse new requests (503) and let those running end for at most this many seconds before cutting them; 0: cut them at once",
      nonNegativeNumber('--shutdown-timeout'),
      0,
    )
    .action(async (o: Record<string, unknown>) => {
      /** The server, once it listens: what a stop closes first. */
      const serving: { close?: (drainMs: number) => Promise<void> } = {};
      let stopping = false;
      const stop = (drainMs: number) => {
        if (stopping) return;
        stopping = true;
        if (serving.close === undefined) process.exit(0);
        else void serving.close(drainMs).then(() => process.exit(0));
      };
      const drainMs = (o.shutdownTimeout as number) * 1000;
      // Its parent gone, nobody waits for the answers: cut at once.
      if (process.channel !== undefined) process.once('disconnect', () => stop(0));
      // Before the start-up delay too: a stop while loading weights just exits.
      process.once('SIGINT', () => stop(drainMs));
      process.once('SIGTERM', () => stop(drainMs));
      const startupMs = (o.startupDelay as number) * 1000;
      if (startupMs > 0) {
        console.log(`goodput engine: starting up, listening in ${startupMs / 1000} s`);
        await new Promise<void>((r) => wallTimers().at(wallClock.now() + startupMs, r));
      }
      const engine = await serveEngine({
        port: o.port as number,
        host: o.host as string,
        ...engineSpecFromFlags(o),
        servedModelName: o.servedModelName as string | undefined,
        imageTokens: o.imageTokens as ImageTokens | undefined,
        maxBodyBytes: mebibytes(o.maxBodyMib as number),
        seed: o.seed as number,
        faults: {
          failRate: o.failRate as number,
          stallRate: o.stallRate as number,
          stallMs: o.stallMs as number,
          crashRate: o.crashRate as number,
        },
        onInternalError: (e) => console.error('goodput engine: internal error:', e),
        apiKeys: apiKeysOf(o.apiKey as string[] | undefined, process.env.VLLM_API_KEY),
      }).catch((e: NodeJS.ErrnoException) => {
        // A port taken or an address not this machine's is the flag's fault, said as such.
        throw e.code === undefined ? e : listenRefused(e, o.host as string, o.port as number);
      });
      console.log(`goodput engine: serving ${engine.servedModelName} at ${engine.url}/v1`);
      serving.close = (ms) => engine.close(ms);
    });
}

/** The keys given, or the environment's one; an empty key is no key. */
function apiKeysOf(flag: readonly string[] | undefined, env: string | undefined): string[] {
  return (flag ?? (env === undefined ? [] : [env])).filter((k) => k !== '');
}
