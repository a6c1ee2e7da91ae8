/**
 * OpenAI's `service_tier` as a class: a client on the OpenAI SDK asks for `flex` (slower,
 * cheaper) or `priority` without a header of Goodput's, and the policy's `service_tiers` says
 * which class each tier is served in (`{ flex: batch, priority: interactive }`; none by
 * default). `auto` and `default` ask for the class the headers name, or the tenant's default. A
 * tier the policy maps to no class is refused by name, as OpenAI refuses a tier a model does not
 * offer; a tier and a class header that name different classes are refused naming both. The
 * class is then granted or not as a header's is (the contract gate). Before the body is read a
 * request's class is the headers' alone, so the queue refuses a request unread only when it
 * rules out every class its body could name (`unreadClasses`); one it rules out in the class
 * asked for alone is refused once its body is read, unparsed, when the body's text cannot name
 * a tier (`mayNameTier`; unread-verdict.ts).
 */
import type { ResolvedPolicy } from '../../core/config/policy.ts';
import {
  CLASS_TIERS,
  type ClassTier,
  type ServiceTier,
  type SloClassName,
} from '../../core/request/slo-classes.ts';
import { describeValue, invalidRequest } from '../../openai/index.ts';
import type { ClientHeaders } from './client-headers.ts';

const isClassTier = (t: ServiceTier): t is ClassTier =>
  (CLASS_TIERS as readonly string[]).includes(t);

/**
 * The class a read request is served in: its tier's, else `asked` (its headers', or its
 * tenant's default).
 */
export function classOfTier(
  tier: ServiceTier | undefined,
  policy: ResolvedPolicy,
  headers: ClientHeaders,
  asked: SloClassName,
): SloClassName {
  if (tier === undefined || !isClassTier(tier)) return asked;
  const cls = policy.serviceTiers[tier];
  if (cls === undefined) {
    const offered = ['auto', 'default', ...CLASS_TIERS.filter((t) => policy.serviceTiers[t])];
    throw invalidRequest(
      `service_tier: not offered by this gateway (expected ${offered.join(', ')} or absent), got ${describeValue(tier)}`,
      'service_tier',
      'invalid_value',
    );
  }
  if (headers.sloClass !== undefined && headers.sloClass !== cls) {
    throw invalidRequest(
      `${headers.classHeader} (${describeValue(headers.sloClass)}) and service_tier (${describeValue(tier)}, served as ${cls}) disagree: send one of them, or name the same class in both`,
      'service_tier',
      'conflicting_fields',
    );
  }
  return cls;
}

/**
 * The classes a request whose headers ask for `asked` may be served in once its body is read:
 * `asked` alone when a header named it (a tier that disagrees is refused), else `asked` and
 * every class a tier names.
 */
export function unreadClasses(
  policy: ResolvedPolicy,
  headers: ClientHeaders,
  asked: SloClassName,
): readonly SloClassName[] {
  if (headers.sloClass !== undefined) return [asked];
  const classes = new Set<SloClassName>([asked]);
  for (const t of CLASS_TIERS) {
    const cls = policy.serviceTiers[t];
    if (cls !== undefined) classes.add(cls);
  }
  return [...classes];
}

/** The most characters a key reading `service_tier` takes: each of its 12 letters escaped. */
const ESCAPED_KEY_CHARS = 72;

/**
 * Whether a body's text may name a tier: the key as written, or with letters escaped
 * (`"service\u005ftier"` parses as the same key). Only a body holding an escape is searched
 * further, key by key — each string a colon follows, read back from it, and decoded only when
 * short enough and holding an escape — so a long text of escapes (JSON from Python, non-ASCII
 * as `\uXXXX`) costs a scan of its colons, never a parse.
 */
export function mayNameTier(text: string): boolean {
  if (text.includes('"service_tier"')) return true;
  if (!text.includes('\\u')) return false;
  for (let colon = text.indexOf(':'); colon >= 0; colon = text.indexOf(':', colon + 1)) {
    // Back over JSON's whitespace to the quote that ends a key; anything else ends no key.
    let end = colon - 1;
    let c = text.charCodeAt(end);
    while (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) c = text.charCodeAt(--end);
    if (c !== 0x22) continue;
    const start = text.lastIndexOf('"', end - 1);
    const key = text.slice(start + 1, end);
    if (start < 0 || key.length > ESCAPED_KEY_CHARS || !key.includes('\\u')) continue;
    try {
      if (JSON.parse(`"${key}"`) === 'service_tier') return true;
    } catch {
      // Not a JSON string (a quote escaped within): no such key.
    }
  }
  return false;
}
