/**
 * Where the shared state lives in Redis (redis-store.ts): a tenant's keys are
 * `goodput:{tenant}:…`, the braces keeping them in one Redis Cluster slot, its name encoded so
 * no name reaches another tenant's; each replica's beat is `goodput:replica:…`, and what the
 * replicas share (who serves, the handovers) is under `goodput:{replicas}:…`.
 */

/** A tenant's key prefix; its name is encoded so no name can reach another tenant's keys. */
function tenantPrefix(tenant: string): string {
  return `goodput:{${encodeURIComponent(tenant)}}`;
}

export function idemKey(tenant: string, key: string): string {
  return `${tenantPrefix(tenant)}:idem:${key}`;
}

export function responseKey(tenant: string, id: string): string {
  return `${tenantPrefix(tenant)}:resp:${id}`;
}

export function replicaKey(replica: string): string {
  return `goodput:replica:${encodeURIComponent(replica)}`;
}

/** The replicas that serve, each scored with when its last beat ends (Redis's clock). */
export const SERVING_KEY = 'goodput:{replicas}:serving';
/** Each replica's last autoscaling tick, and when each ends (../peer-windows.ts). */
export const WINDOWS_KEY = 'goodput:{replicas}:windows';
export const WINDOWS_UNTIL_KEY = 'goodput:{replicas}:windows:until';
/** Background responses handed over, oldest first (http/background-handover.ts). */
export const ORDERS_KEY = 'goodput:{replicas}:handovers';

/** What the health check writes: a store that answers but takes no writes is down. */
export const PING_KEY = 'goodput:{replicas}:ping';

export function orderKey(tenant: string, id: string): string {
  return `${tenantPrefix(tenant)}:order:${id}`;
}

export function settlingKey(tenant: string, id: string): string {
  return `${tenantPrefix(tenant)}:settling:${id}`;
}

/** The turn kept for the retry with an Idempotency-Key (core/queueing/kept-turns.ts). */
export function turnKey(tenant: string, key: string): string {
  return `${tenantPrefix(tenant)}:turn:${key}`;
}

/** The channel each kept turn's end is told on, to the replica that counts it. */
export const TURNS_CHANNEL = 'goodput:{replicas}:turns';

export function eventsKey(tenant: string, id: string): string {
  return `${tenantPrefix(tenant)}:events:${id}`;
}

export function tenantKeys(tenant: string) {
  const p = tenantPrefix(tenant);
  return {
    tokens: `${p}:tokens`,
    requests: `${p}:requests`,
    leases: `${p}:leases`,
    retry: `${p}:retry`,
  };
}
