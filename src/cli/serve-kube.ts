/**
 * `serve --engine-pool kubernetes`, from its flags: the scalable object (`--k8s-scale`, its path
 * from the API root), each replica's backend URL (`--k8s-backend-url`, `{i}` its ordinal), and
 * the API server and token when not the pod's own (`--k8s-api`, `--k8s-token-file`), and for
 * gateways that share the object, the Lease they elect the one that acts on (`--k8s-lease`). The
 * object is read at start, so a wrong path or a role that may not read it stops the gateway
 * there; so is the Lease, when named.
 */
import { hostname } from 'node:os';
import { ConfigError } from '../core/errors.ts';
import { KubeScale } from '../gateway/kube-api.ts';
import { KubeClient } from '../gateway/kube-client.ts';
import { KubeLease } from '../gateway/kube-lease.ts';
import { KubernetesPool } from '../gateway/kube-pool.ts';
import type { OpsLog } from '../gateway/ops-log.ts';
import { serverBaseUrl } from '../openai/server-url.ts';
import { randomId } from '../runtime/entropy-rng.ts';
import { epochMs, wallClock } from '../runtime/wall-clock.ts';
import { wallTimers } from '../runtime/wall-timers.ts';

const KUBE_FLAGS = [
  ['k8sScale', '--k8s-scale'],
  ['k8sBackendUrl', '--k8s-backend-url'],
  ['k8sApi', '--k8s-api'],
  ['k8sTokenFile', '--k8s-token-file'],
  ['k8sLease', '--k8s-lease'],
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
  const timers = wallTimers(wallClock);
  const client = new KubeClient(
    { apiUrl: o.k8sApi as string | undefined, tokenFile: o.k8sTokenFile as string | undefined },
    { clock: wallClock, timers },
  );
  const lease = o.k8sLease === undefined ? undefined : leaseOf(o.k8sLease as string, path, client);
  if (lease !== undefined) {
    await lease.get().catch((e: Error) => {
      const why = `a Lease the gateway may read, create and update (${e.message})`;
      throw new ConfigError('--k8s-lease', why, o.k8sLease);
    });
  }
  try {
    return await KubernetesPool.open({
      slots,
      backendUrl: template,
      scale: new KubeScale(path, client),
      maxDrainMs: (o.drainTimeout as number) * 1000,
      clock: wallClock,
      timers,
      log,
      // In a pod its hostname is the pod's name; the suffix tells a restarted process apart.
      ...(lease === undefined
        ? {}
        : { election: { lease, identity: `${hostname()}_${randomId()}`, epochMs } }),
    });
  } catch (e) {
    const why = `a scalable object the gateway may read and scale (${(e as Error).message})`;
    throw new ConfigError('--k8s-scale', why, path);
  }
}

/** `--k8s-lease [NS/]NAME`: with no namespace, the scaled object's. */
function leaseOf(name: string, scalePath: string, client: KubeClient): KubeLease {
  const parts = name.split('/');
  const namespace =
    parts.length === 2 ? parts[0] : /\/namespaces\/([^/]+)\//.exec(`/${scalePath}`)?.[1];
  const dns = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
  const leaseName = parts[parts.length - 1];
  if (parts.length > 2 || namespace === undefined || !dns.test(namespace) || !dns.test(leaseName)) {
    const why = 'a Lease name, NAME or NS/NAME (NS: needed when --k8s-scale names none)';
    throw new ConfigError('--k8s-lease', why, name);
  }
  return new KubeLease(namespace, leaseName, client);
}
