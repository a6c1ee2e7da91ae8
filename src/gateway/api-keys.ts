/**
 * API keys → tenants. The policy file holds only SHA-256 digests of keys; a presented key is
 * hashed and compared with every digest in constant time, so neither the file nor the timing of
 * a refusal gives a key away. Keys are never logged or kept.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ResolvedPolicy } from '../core/config/policy.ts';

export interface ApiKeys {
  /** The tenant a presented key authenticates as; undefined for an unknown key. */
  tenantOf(presentedKey: string): string | undefined;
  /** Whether any key is configured (a policy with none accepts unauthenticated requests). */
  readonly required: boolean;
}

export function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export function apiKeys(policy: ResolvedPolicy): ApiKeys {
  const entries: Array<{ digest: Buffer; tenant: string }> = [];
  for (const [name, t] of policy.tenants.named) {
    for (const hex of t.apiKeySha256)
      entries.push({ digest: Buffer.from(hex, 'hex'), tenant: name });
  }
  return {
    required: entries.length > 0,
    tenantOf(presentedKey) {
      const digest = sha256(presentedKey);
      let found: string | undefined;
      // Compare with every digest, matched or not, so time does not depend on which matched.
      for (const e of entries) if (timingSafeEqual(digest, e.digest)) found ??= e.tenant;
      return found;
    },
  };
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
