/**
 * API keys → tenants. The policy file holds only SHA-256 digests of keys, and a presented key
 * is found by its digest: what a lookup's time could tell is of digests, which are not secret
 * (the file holds them), never of keys — a key cannot be worked back from its digest. So the
 * check costs the same with 10 keys or 10,000 (it was a constant-time compare with every digest:
 * 0.55 ms a request at 10,000, bench/RESULTS.md). Keys are never logged or kept. The digests
 * follow the policy's tenant directory: a reloaded policy's keys are the ones checked from its
 * next request on.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import type { TenantDirectory } from '../core/config/tenant-schema.ts';
import type { TenantPolicy } from '../core/request/tenant.ts';

export class ApiKeys {
  readonly #tenants: TenantDirectory;
  /** The tenants `#byDigest` was read from: a reload puts new ones in the directory. */
  #readFrom: ReadonlyMap<string, TenantPolicy> | undefined;
  /** Tenant by key digest (hex): the policy lists each digest once (tenant-schema.ts). */
  #byDigest = new Map<string, string>();

  constructor(tenants: TenantDirectory) {
    this.#tenants = tenants;
  }

  /** Whether any key is configured (a policy with none accepts unauthenticated requests). */
  get required(): boolean {
    return this.#current().size > 0;
  }

  /** The tenant a presented key authenticates as; undefined for an unknown key. */
  tenantOf(presentedKey: string): string | undefined {
    return this.#current().get(sha256(presentedKey).toString('hex'));
  }

  #current(): ReadonlyMap<string, string> {
    const named = this.#tenants.named;
    if (this.#readFrom !== named) {
      this.#byDigest = new Map();
      for (const [tenant, t] of named) {
        for (const hex of t.apiKeySha256)
          if (!this.#byDigest.has(hex)) this.#byDigest.set(hex, tenant);
      }
      this.#readFrom = named;
    }
    return this.#byDigest;
  }
}

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export function apiKeys(policy: ResolvedPolicy): ApiKeys {
  return new ApiKeys(policy.tenants);
}

/** The admin token check, also constant-time (tokens are compared as digests). */
export function adminTokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  return timingSafeEqual(sha256(presented), sha256(expected));
}

/** The token of an `Authorization: Bearer <token>` header; undefined for anything else. */
export function bearerToken(authorization: string | null | undefined): string | undefined {
  return credentials(authorization, 'bearer ');
}

/** What follows `scheme ` (lowercase, with its space), matched in any case as RFC 9110 §11.1 says. */
function credentials(authorization: string | null | undefined, scheme: string): string | undefined {
  if (authorization == null || authorization.length <= scheme.length) return undefined;
  if (authorization.slice(0, scheme.length).toLowerCase() !== scheme) return undefined;
  return authorization.slice(scheme.length);
}

/** The password of an `Authorization: Basic base64(user:password)` header; undefined for anything else. */
export function basicPassword(authorization: string | null | undefined): string | undefined {
  const encoded = credentials(authorization, 'basic ');
  if (encoded === undefined) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 || colon === decoded.length - 1 ? undefined : decoded.slice(colon + 1);
}
