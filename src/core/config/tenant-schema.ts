/**
 * The `tenants` section of a policy: weights, granted classes, quotas, agent-tree budgets and
 * the server-side retry budget. Without the section every tenant gets the defaults; with it,
 * only listed tenants are known, plus any tenant when a `"*"` entry gives the defaults. It is
 * the one section a running gateway reloads (keys rotate, tenants come and go), so every reader
 * looks a tenant up when it needs one and keeps no copy.
 */
import { z } from 'zod';
import { ConfigError } from '../errors.ts';
import { SLO_CLASS_NAMES } from '../request/slo-classes.ts';
import { DEFAULT_TENANT, type TenantPolicy } from '../request/tenant.ts';

const positive = z.number().positive();
const count = z.int().min(1);

const tenant = z
  .object({
    weight: positive.optional(),
    classes: z.array(z.enum(SLO_CLASS_NAMES)).min(1).optional(),
    /** Served model names (the base model, LoRA adapters) it may use; absent: all of them. */
    models: z.array(z.string().min(1)).min(1).optional(),
    stream: z.boolean().optional(),
    quotas: z
      .object({
        window_ms: positive.optional(),
        tokens_per_window: positive.optional(),
        requests_per_window: count.optional(),
        gpu_ms_per_window: positive.optional(),
        max_concurrent_requests: count.optional(),
        max_concurrent_sessions: count.optional(),
      })
      .strict()
      .optional(),
    root_budget: z
      .object({
        max_tokens: positive.optional(),
        max_branches: z.int().min(0).optional(),
        max_wall_ms: positive.optional(),
      })
      .strict()
      .optional(),
    retry_budget_ratio: z.number().min(0).optional(),
    /** SHA-256 (hex) of each API key that authenticates as this tenant: the file holds no secret. */
    api_keys_sha256: z
      .array(z.string().regex(/^[0-9a-f]{64}$/, { message: 'a lowercase hex SHA-256 digest' }))
      .optional(),
    /** Class a request gets when it asks for none; must be granted. */
    default_class: z.enum(SLO_CLASS_NAMES).optional(),
    /** admin: a lane served before every band, for operators' and safety traffic. */
    lane: z.enum(['normal', 'admin']).optional(),
  })
  .strict()
  .refine(
    (t) =>
      t.default_class === undefined || (t.classes ?? SLO_CLASS_NAMES).includes(t.default_class),
    {
      message: 'a default_class among the granted classes',
    },
  );

export const tenantsSchema = z.record(z.string().min(1), tenant).superRefine((tenants, ctx) => {
  // A key authenticates as one tenant: a digest listed twice is a mistake, whoever's it is.
  const owner = new Map<string, string>();
  for (const [name, t] of Object.entries(tenants)) {
    for (const [i, digest] of (t.api_keys_sha256 ?? []).entries()) {
      const first = owner.get(digest);
      if (first === undefined) owner.set(digest, name);
      else {
        ctx.addIssue({
          code: 'custom',
          message: `a key digest listed once (it is ${first === name ? 'listed twice here' : `tenant ${first}'s too`})`,
          path: [name, 'api_keys_sha256', i],
        });
      }
    }
  }
});

export class TenantDirectory {
  #named: ReadonlyMap<string, TenantPolicy>;
  #fallback: Omit<TenantPolicy, 'name'> | undefined;

  constructor(
    named: ReadonlyMap<string, TenantPolicy>,
    fallback: Omit<TenantPolicy, 'name'> | undefined,
  ) {
    this.#named = named;
    this.#fallback = fallback;
  }

  /** Listed tenants by name. */
  get named(): ReadonlyMap<string, TenantPolicy> {
    return this.#named;
  }

  /** Applies to unlisted tenants; undefined when unlisted tenants are unknown. */
  get fallback(): Omit<TenantPolicy, 'name'> | undefined {
    return this.#fallback;
  }

  /** A reloaded policy's tenants take the place of these, for every reader at once. */
  replace(next: TenantDirectory): void {
    this.#named = next.named;
    this.#fallback = next.fallback;
  }
}

function toTenant(t: z.infer<typeof tenant>): Omit<TenantPolicy, 'name'> {
  const q = t.quotas ?? {};
  const r = t.root_budget;
  return {
    weight: t.weight ?? DEFAULT_TENANT.weight,
    classes: t.classes ?? DEFAULT_TENANT.classes,
    ...(t.models === undefined ? {} : { models: t.models }),
    streamAllowed: t.stream ?? DEFAULT_TENANT.streamAllowed,
    quotas: {
      windowMs: q.window_ms ?? DEFAULT_TENANT.quotas.windowMs,
      tokensPerWindow: q.tokens_per_window,
      requestsPerWindow: q.requests_per_window,
      gpuMsPerWindow: q.gpu_ms_per_window,
      maxConcurrentRequests: q.max_concurrent_requests,
      maxConcurrentSessions: q.max_concurrent_sessions,
    },
    rootBudget:
      r === undefined
        ? undefined
        : { maxTokens: r.max_tokens, maxBranches: r.max_branches, maxWallMs: r.max_wall_ms },
    retryBudgetRatio: t.retry_budget_ratio ?? DEFAULT_TENANT.retryBudgetRatio,
    apiKeySha256: t.api_keys_sha256 ?? [],
    defaultClass: t.default_class ?? (t.classes ?? DEFAULT_TENANT.classes)[0],
    lane: t.lane ?? DEFAULT_TENANT.lane,
  };
}

export function resolveTenants(
  section: z.infer<typeof tenantsSchema> | undefined,
): TenantDirectory {
  if (section === undefined) return new TenantDirectory(new Map(), DEFAULT_TENANT);
  const named = new Map<string, TenantPolicy>();
  for (const [name, t] of Object.entries(section)) {
    if (name !== '*') named.set(name, { name, ...toTenant(t) });
  }
  const star = section['*'];
  return new TenantDirectory(named, star === undefined ? undefined : toTenant(star));
}

export function lookupTenant(dir: TenantDirectory, name: string): TenantPolicy | undefined {
  const t = dir.named.get(name);
  if (t !== undefined) return t;
  return dir.fallback === undefined ? undefined : { name, ...dir.fallback };
}

/**
 * Refuses tenants that list (`models`) a model not among `served`, naming the first by its
 * config path: a ConfigError. A gateway refuses such a policy at start and on reload, and the
 * simulator before it runs, since the name grants nothing and is most likely a typo that would
 * turn the tenant's requests away.
 */
export function refuseUnservedModels(
  tenants: TenantDirectory,
  served: readonly string[],
  file?: string,
): void {
  const listed: [string, Omit<TenantPolicy, 'name'> | undefined][] = [...tenants.named];
  listed.push(['*', tenants.fallback]);
  for (const [name, t] of listed) {
    const i = t?.models?.findIndex((m) => !served.includes(m)) ?? -1;
    const model = t?.models?.[i];
    if (model === undefined) continue;
    const expected = `a served model (${served.join(', ')})`;
    throw new ConfigError(`tenants.${name}.models[${i}]`, expected, model, file);
  }
}
