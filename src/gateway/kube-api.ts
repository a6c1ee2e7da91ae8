/**
 * The scale subresource of a scalable object (a StatefulSet, a LeaderWorkerSet, anything
 * `kubectl scale` scales), read with GET and set with a JSON merge patch of `spec.replicas`, as
 * the HPA controller sets it.
 */
import { KubeClient } from './kube-client.ts';

/** A scale subresource as the API returns it (`autoscaling/v1` Scale). */
export interface Scale {
  /** The replicas asked for. */
  readonly spec: number;
  /** The replicas there are. */
  readonly status: number;
}

export class KubeScale {
  readonly url: string;
  readonly #client: KubeClient;

  /** `path`: the object's, from the API root (`apis/apps/v1/namespaces/NS/statefulsets/NAME`). */
  constructor(path: string, client: KubeClient) {
    this.#client = client;
    this.url = `${client.url(path)}/scale`;
  }

  async get(): Promise<Scale> {
    return scaleOf(await this.#client.call('GET', this.url));
  }

  /** Sets `spec.replicas`; resolves with the scale as the server then holds it. */
  async set(replicas: number): Promise<Scale> {
    return scaleOf(await this.#client.call('PATCH', this.url, { spec: { replicas } }));
  }
}

function scaleOf(v: unknown): Scale {
  const s = v as { spec?: { replicas?: unknown }; status?: { replicas?: unknown } } | null;
  const spec = s?.spec?.replicas ?? 0;
  const status = s?.status?.replicas ?? 0;
  if (typeof spec !== 'number' || typeof status !== 'number') {
    throw new Error(`not a Scale: ${JSON.stringify(v).slice(0, 200)}`);
  }
  return { spec, status };
}
