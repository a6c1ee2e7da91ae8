/**
 * `serve --engine-pool kubernetes`, from its flags: the scalable object (`--k8s-scale`, its path
 * from the API root), each replica's backend URL (`--k8s-backend-url`, `{i}` its ordinal), and
 * the API server and token when not the pod's own (`--k8s-api`, `--k8s-token-file`). The object
 * is read at start, so a wrong path or a role that may not read it stops the gateway there.
 */
import { ConfigError } from '../core/errors.ts';
import { KubeScale } from '../gateway/kube-api.ts';
import { KubernetesPool } from '../gateway/kube-pool.ts';
import type { OpsLog } from '../gateway/ops-log.ts';
import { serverBaseUrl } from '../openai/server-url.ts';
import { wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';

const KUBE_FLAGS = [
  ['k8sScale', '--k8s-scale'],
  ['k8sBackendUrl', '--k8s-backend-url'],
  ['k8sApi', '--k8s-api'],
  ['k8sTokenFile', '--k8s-token-file'],
] as const;

/** The --k8s-* flags mean nothing to another pool: refused, naming the first. */
export function refuseStrayKubeFlags(o: Record<string, unknown>, kind: string): void {
  if (kind === 'kubernetes') return;
  for (const [key, flag] of KUBE_FLAGS) {
    if (o[key] !== undefined) throw new ConfigError(flag, '--engine-pool kubernetes with it', kind);
  }
}

export async function kubePool(
  o: Record<string, unknown>,
  slots: number,
  log: OpsLog,
): Promise<KubernetesPool> {
  const path = o.k8sScale as string | undefined;
  if (path === undefined) {
    throw new ConfigError(
      '--k8s-scale',
      'the scalable object, e.g. apis/apps/v1/namespaces/llm/statefulsets/vllm',
      'none',
    );
  }
  const template = o.k8sBackendUrl as string | undefined;
  if (template === undefined || !template.includes('{i}')) {
    throw new ConfigError(
      '--k8s-backend-url',
      "replica {i}'s URL, e.g. http://vllm-{i}.vllm.llm.svc:8000",
      template ?? 'none',
    );
  }
  serverBaseUrl(template.replaceAll('{i}', '0'), '--k8s-backend-url');
  const scale = new KubeScale(path, {
    apiUrl: o.k8sApi as string | undefined,
    tokenFile: o.k8sTokenFile as string | undefined,
  });
  try {
    return await KubernetesPool.open({
      slots,
      backendUrl: template,
      scale,
      maxDrainMs: (o.drainTimeout as number) * 1000,
      clock: wallClock,
      timers: wallTimers(wallClock),
      log,
    });
  } catch (e) {
    const why = `a scalable object the gateway may read and scale (${(e as Error).message})`;
    throw new ConfigError('--k8s-scale', why, path);
  }
}
