/**
 * A `coordination.k8s.io/v1` Lease, the object Kubernetes controllers elect their leader on
 * (client-go's `leaderelection`, `kube-controller-manager`'s own): read with GET, made with
 * POST when there is none, and written with PUT carrying the `resourceVersion` it was read at,
 * so of two gateways writing one read the API server takes the first and answers the second 409
 * Conflict. The pool's state rides on it as the annotation `goodput.dev/pool`
 * (`{"replicas":3,"draining":[2]}`), so the gateways that do not lead know which replicas are
 * draining without another object or permission; and an operator's freeze of the autoscaler as
 * `goodput.dev/frozen`, so it holds whichever gateway leads.
 */
import { KubeError, type KubeClient } from './kube-client.ts';

export const POOL_ANNOTATION = 'goodput.dev/pool';
/** An operator's freeze of the autoscaler, for whichever gateway leads (`"true"`, `"false"`). */
export const FROZEN_ANNOTATION = 'goodput.dev/frozen';

/** What the leading gateway says of the pool: the replicas it set, and those draining. */
export interface PoolWord {
  readonly replicas: number;
  readonly draining: readonly number[];
}

/** A Lease as the election reads and writes it. */
export interface LeaseRecord {
  /** Who holds it; '' when released. */
  readonly holder: string;
  readonly durationMs: number;
  /** RFC 3339 with microseconds (a MicroTime), for people reading it with kubectl. */
  readonly acquireTime: string;
  readonly renewTime: string;
  /** How many times it changed hands. */
  readonly transitions: number;
  /** The leading gateway's word on the pool; undefined before any said. */
  readonly pool?: PoolWord;
  /** An operator's freeze, set through any gateway; undefined: none was ever set. */
  readonly frozen?: boolean;
  /** The version it was read at; a write with a stale one is refused (409). */
  readonly version: string;
}

/** What the election needs of a Lease: the object above, or a test's. */
export interface LeaseStore {
  /** The Lease, or undefined when there is none. */
  get(): Promise<LeaseRecord | undefined>;
  /** Makes it; rejects with a `LeaseConflict` when another made it first. */
  create(r: Omit<LeaseRecord, 'version'>): Promise<LeaseRecord>;
  /** Writes it over `r.version`; rejects with a `LeaseConflict` when it has changed since. */
  update(r: LeaseRecord): Promise<LeaseRecord>;
}

/** Another gateway wrote the Lease first: not a failure, the next read shows who. */
export class LeaseConflict extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LeaseConflict';
  }
}

export class KubeLease implements LeaseStore {
  readonly url: string;
  readonly #client: KubeClient;
  readonly #namespace: string;
  readonly #name: string;

  constructor(namespace: string, name: string, client: KubeClient) {
    this.#client = client;
    this.#namespace = namespace;
    this.#name = name;
    this.url = client.url(`apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}`);
  }

  async get(): Promise<LeaseRecord | undefined> {
    try {
      return recordOf(await this.#client.call('GET', this.url));
    } catch (e) {
      if (e instanceof KubeError && e.status === 404) return undefined;
      throw e;
    }
  }

  async create(r: Omit<LeaseRecord, 'version'>): Promise<LeaseRecord> {
    const collection = this.url.slice(0, this.url.lastIndexOf('/'));
    return recordOf(await conflicting(this.#client.call('POST', collection, this.#object(r))));
  }

  async update(r: LeaseRecord): Promise<LeaseRecord> {
    const put = this.#client.call('PUT', this.url, this.#object(r, r.version));
    return recordOf(await conflicting(put));
  }

  #object(r: Omit<LeaseRecord, 'version'>, version?: string): unknown {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.#name,
        namespace: this.#namespace,
        ...(version === undefined ? {} : { resourceVersion: version }),
        annotations: {
          ...(r.pool === undefined ? {} : { [POOL_ANNOTATION]: poolText(r.pool) }),
          ...(r.frozen === undefined ? {} : { [FROZEN_ANNOTATION]: String(r.frozen) }),
        },
      },
      spec: {
        holderIdentity: r.holder,
        leaseDurationSeconds: Math.max(1, Math.round(r.durationMs / 1000)),
        acquireTime: r.acquireTime,
        renewTime: r.renewTime,
        leaseTransitions: r.transitions,
      },
    };
  }
}

/** A 409 (AlreadyExists on create, Conflict on update) as the `LeaseConflict` it means. */
async function conflicting(call: Promise<unknown>): Promise<unknown> {
  try {
    return await call;
  } catch (e) {
    if (e instanceof KubeError && e.status === 409) throw new LeaseConflict(e.message);
    throw e;
  }
}

/** Epoch milliseconds as a Kubernetes MicroTime: RFC 3339 with six fractional digits. */
export function microTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

function poolText(p: PoolWord): string {
  return JSON.stringify({ replicas: p.replicas, draining: p.draining });
}

function recordOf(v: unknown): LeaseRecord {
  const o = v as {
    metadata?: { resourceVersion?: unknown; annotations?: Record<string, unknown> };
    spec?: Record<string, unknown>;
  } | null;
  const spec = o?.spec ?? {};
  const version = o?.metadata?.resourceVersion;
  if (typeof version !== 'string') {
    throw new Error(`not a Lease: ${JSON.stringify(v).slice(0, 200)}`);
  }
  const str = (x: unknown) => (typeof x === 'string' ? x : '');
  const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : 0);
  const pool = poolOf(o?.metadata?.annotations?.[POOL_ANNOTATION]);
  const frozenText = o?.metadata?.annotations?.[FROZEN_ANNOTATION];
  const frozen = frozenText === 'true' ? true : frozenText === 'false' ? false : undefined;
  return {
    holder: str(spec.holderIdentity),
    durationMs: num(spec.leaseDurationSeconds) * 1000,
    acquireTime: str(spec.acquireTime),
    renewTime: str(spec.renewTime),
    transitions: num(spec.leaseTransitions),
    ...(pool === undefined ? {} : { pool }),
    ...(frozen === undefined ? {} : { frozen }),
    version,
  };
}

/** The annotation's word, or undefined when it is not one (someone edited it by hand). */
function poolOf(text: unknown): PoolWord | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const p = JSON.parse(text) as { replicas?: unknown; draining?: unknown };
    const whole = (x: unknown): x is number => Number.isInteger(x) && (x as number) >= 0;
    if (!whole(p.replicas) || !Array.isArray(p.draining) || !p.draining.every(whole)) {
      return undefined;
    }
    return { replicas: p.replicas, draining: p.draining };
  } catch {
    return undefined;
  }
}
