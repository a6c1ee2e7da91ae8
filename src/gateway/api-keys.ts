/**
 * API keys → tenants. The policy file holds only SHA-256 digests of keys; a presented key is
 * hashed and compared with every digest in constant time, so neither the file nor the timing of
 * a refusal gives a key away. Keys are never logged or kept. The digests follow the policy's
 * tenant directory: a reloaded policy's keys are the ones checked from its next request on.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ResolvedPolicy } from '../core/config/policy.ts';
import type { TenantDirectory } from '../core/config/tenant-schema.ts';
import type { TenantPolicy } from '../core/request/tenant.ts';

interface KeyDigest {
  readonly digest: Buffer;
  readonly tenant: string;
}

export class ApiKeys {
  readonly #tenants: TenantDirectory;
  /** The tenants `#digests` were read from: a reload puts new ones in the directory. */
  #readFrom: ReadonlyMap<string, TenantPolicy> | undefined;
  #digests: readonly KeyDigest[] = [];

  constructor(tenants: TenantDirectory) {
    this.#tenants = tenants;
  }

  /** Whether any key is configured (a policy with none accepts unauthenticated requests). */
  get required(): boolean {
    return this.#current().length > 0;
  }

  /** How many keys are configured. */
  get count(): number {
    return this.#current().length;
  }

  /** The tenant a presented key authenticates as; undefined for an unknown key. */
  tenantOf(presentedKey: string): string | undefined {
    const digest = sha256(presentedKey);
    let found: string | undefined;
    // Compare with every digest, matched or not, so time does not depend on which matched.
    for (const e of this.#current()) if (timingSafeEqual(digest, e.digest)) found ??= e.tenant;
    return found;
  }

  #current(): readonly KeyDigest[] {
    const named = this.#tenants.named;
    if (this.#readFrom !== named) {
      this.#digests = [...named].flatMap(([tenant, t]) =>
        t.apiKeySha256.map((hex) => ({ digest: Buffer.from(hex, 'hex'), tenant })),
      );
      this.#readFrom = named;
    }
    return this.#digests;
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
