/**
 * What `goodput serve` says once it listens: the policy and the fleet, how requests are planned
 * until their lengths are learned, images planned at their most, a gateway that asks no key,
 * the shared state, and where the API and the status port are.
 */
import type { ResolvedPolicy } from '../core/config/policy.ts';
import type { EngineSpec } from '../engine/engine-spec.ts';
import type { OpsLog } from '../gateway/ops-log.ts';
import type { ScalePool } from '../gateway/scale-export.ts';
import type { RunningGateway } from '../gateway/serve.ts';
import { mostImageTokens, type ImageTokens } from '../openai/image-size.ts';

export interface Started {
  readonly o: Record<string, unknown>;
  readonly policy: ResolvedPolicy;
  readonly spec: EngineSpec;
  readonly urls: readonly string[];
  readonly pool: ScalePool | undefined;
  readonly imageTokens: ImageTokens | undefined;
  readonly model: string;
}

export function logStarted(log: OpsLog, running: RunningGateway, started: Started): void {
  const { o, policy, spec, urls, pool, imageTokens, model } = started;
  const fleet = running.embedded
    ? { embedded_replicas: o.replicas as number, model: spec.model, gpu: spec.gpu }
    : pool !== undefined
      ? { engine_pool: o.enginePool as string, slots: urls, model: spec.model, gpu: spec.gpu }
      : { backends: urls };
  log.info({ policy: policy.revision, ...fleet }, `policy ${policy.revision}`);
  if (policy.admission.type === 'goodput') {
    const { minSamples, priorOutputReserve } = policy.estimate;
    const which = running.gateway.pipeline.learned.restored === undefined ? 'a' : 'a cold';
    log.info(
      { prior_output_reserve: priorOutputReserve, min_samples: minSamples },
      `until ${which} class's output lengths are learned, its requests reserve KV for up to ` +
        `${priorOutputReserve} output tokens (estimate.prior_output_reserve; less with max_tokens)`,
    );
  }
  if (
    imageTokens !== undefined &&
    imageTokens.rule !== 'fixed' &&
    imageTokens.urlTokens === mostImageTokens(imageTokens)
  ) {
    log.warn(
      { url_tokens: imageTokens.urlTokens },
      `images by URL are planned at ${imageTokens.urlTokens} tokens each, the most one can take, until the backends have counted 20 requests holding them (goodput_url_image_planned_tokens); set --image-tokens ${imageTokens.rule}:url_tokens=N to start from what your clients' images take`,
    );
  }
  if ([...policy.tenants.named.values()].every((t) => t.apiKeySha256.length === 0)) {
    log.warn({}, 'no API keys configured: requests need no key and count as tenant `default`');
  }
  if ((o.adminToken ?? process.env.GOODPUT_ADMIN_TOKEN) === undefined) {
    log.info(
      {},
      'no admin token: /admin (policy reload, autoscaler freeze, decisions) answers 401 and /dashboard is open; set --admin-token or $GOODPUT_ADMIN_TOKEN',
    );
  }
  if (o.redis !== undefined) {
    log.info(
      { failure: o.redisFailure, gateway_replicas: o.gatewayReplicas },
      `shared state in Redis (fails ${o.redisFailure as string})`,
    );
  }
  log.info(
    { url: `${running.url}/v1`, model },
    `OpenAI API at ${running.url}/v1 (model "${model}")`,
  );
  if (running.statusUrl !== undefined) {
    log.info(
      { status_url: running.statusUrl },
      `status port at ${running.statusUrl} (/healthz, /readyz, /health, /metrics)`,
    );
  }
}
