/**
 * `POST /v1/chat/completions`, `POST /v1/completions` and `POST /v1/responses` (served as the
 * chat completion it is: openai/responses-request.ts), as a few steps, each of which may end
 * the request with its refusal: authenticate → read and validate the body → read the client's
 * headers (and the tenant a fairness id names, if the key allows it) → the shared-state door
 * (idempotency, tenant quotas and slot, retry budget; see shared/door.ts) →
 * admit and serve (serve-admitted.ts). Every request gets an id at once, carried by every
 * answer (`x-goodput-request-id`), and every refusal — wherever it happens — is counted and has
 * a decision record under that id. What the request took at the door is given back
 * when it ends, however it ends; a completed answer is kept for replay under its
 * Idempotency-Key, bound to the request's fingerprint. The request counts as in flight (for the
 * gateway's drain) until nothing of it remains, and is traced (tracing/) from its arrival to its
 * answer's last byte.
 */
import type { ServerResponse } from 'node:http';
import { OUT_OF_REACH } from '../../core/admission/up-front.ts';
import { modelsOf } from '../../core/admission/contract-gate.ts';
import type { Rejection } from '../../core/request/decision.ts';
import type { ResolvedPolicy } from '../../core/config/policy.ts';
import { lookupTenant } from '../../core/config/tenant-schema.ts';
import type { LlmRequest } from '../../core/request/request.ts';
import type { SloClassName } from '../../core/request/slo-classes.ts';
import type { Ms } from '../../core/request/units.ts';
import type { Timers } from '../../core/ports/timers.ts';
import { OpenAiError } from '../../openai/index.ts';
import { bearerToken, type ApiKeys } from '../api-keys.ts';
import { upstreamKind, type Endpoint } from '../backend.ts';
import type { Gateway } from '../gateway.ts';
import type { GatewayMetrics } from '../gateway-metrics.ts';
import { OPEN_DOOR, atTheDoor } from '../shared/door.ts';
import type { SharedStore } from '../shared/shared-store.ts';
import type { SharedTurns } from '../shared-turns.ts';
import { isRequestStopped } from '../stop.ts';
import { askedClass, declaredAttempt, parseClientHeaders, tenantFor } from './client-headers.ts';
import type { InFlight } from './in-flight.ts';
import type { Inbound } from './inbound.ts';
import { UploadOverdue } from './read-body.ts';
import { errorWhole, isWhole, named, told, type Answer, type Whole } from './answer.ts';
import { quotaHeaders } from './quota-headers.ts';
import type { RequestTrace, RequestTracer } from '../tracing/request-trace.ts';
import { SHUTTING_DOWN, refusalOf, unreadReason } from './refusals.ts';
import { askedOf, beyondWindowWords, wordsFor, type Words } from './refusal-words.ts';
import { admitAndServe, type Served } from './serve-admitted.ts';
import { serveInBackground } from './background.ts';
import type { BackgroundRuns } from './background-runs.ts';
import type { Adoption } from './background-handover.ts';
import { fingerprint, replayed } from './replay.ts';
import { clientDeadline, policyRequest } from './policy-request.ts';
import { classOfTier, mayNameTier, unreadClasses } from './service-tier.ts';
import { queueVerdict } from './unread-verdict.ts';
import { readRequest } from './read-request.ts';
import { continued, keeper, truncated } from './kept-responses.ts';
import type { ImageTokens } from '../../openai/image-size.ts';
import type { PromptScale } from '../../core/estimate/prompt-scale.ts';

export interface CompletionsDeps {
  readonly gateway: Gateway;
  readonly keys: ApiKeys;
  readonly policy: ResolvedPolicy;
  readonly servedModels: readonly string[];
  readonly nowMs: () => Ms;
  readonly epochMs: () => number;
  readonly timers: Timers;
  readonly newId: () => string;
  /** Quotas, retry budgets and idempotency keys, shared with the other gateway replicas. */
  readonly store: SharedStore;
  readonly metrics: GatewayMetrics;
  readonly inFlight: InFlight;
  readonly bodyLimitBytes: number;
  /** Whether the gateway sheds new requests on arrival now (its event loop behind). */
  readonly shedding: () => boolean;
  /** Each request's trace (tracing/): none unless asked for. */
  readonly tracer: RequestTracer;
  /**
   * The backends' replies are filler text (the embedded simulated fleet): what filler cannot
   * answer — a reply format, a tool call required, log probabilities — is refused at the door.
   * Servers answer them (or refuse them when not started for them) themselves.
   */
  readonly fillerReplies: boolean;
  /** Whether Responses API responses are kept for their next turn (kept-responses.ts). */
  readonly keepResponses: boolean;
  /** How long the store keeps a response from its last save; unset: not known here. */
  readonly keptTtlMs?: Ms;
  /**
   * The prompt tokens an image takes in the served model (`--image-tokens`, image-size.ts);
   * unknown: an image is refused by name (openai/image-parts.ts).
   */
  readonly imageTokens?: ImageTokens;
  /** What the backends make of an estimated prompt (prompt-scale.ts); none: the estimate. */
  readonly promptScale?: PromptScale;
  /** The Responses API's background responses this process runs (background.ts). */
  readonly background: BackgroundRuns;
  /** Turns kept for retries, here and on the other replicas (shared-turns.ts). */
  readonly turns: SharedTurns;
}

/** A background response taken from a replica that drained (background-handover.ts). */
interface Taken {
  readonly requestId: string;
  readonly adoption: Adoption;
}

/** The completion endpoints, by path. */
export const COMPLETION_PATHS: Readonly<Record<string, Endpoint>> = {
  '/v1/chat/completions': 'chat',
  '/v1/completions': 'completion',
  '/v1/responses': 'responses',
};

/** `outgoing`: Node's response, when Node serves the request; a stream is written to it directly. */
export async function handleCompletion(
  kind: Endpoint,
  inbound: Inbound,
  deps: CompletionsDeps,
  outgoing?: ServerResponse,
  taken?: Taken,
): Promise<Answer> {
  const id = taken?.requestId ?? deps.newId();
  // One handed over came, and was answered, where it was asked.
  if (taken === undefined) deps.metrics.apiRequests.inc({ endpoint: kind });
  const trace = deps.tracer.start(kind, id, inbound.header, deps.nowMs());
  let answer: Answer | undefined;
  try {
    answer = await complete(kind, inbound, deps, id, trace, outgoing, taken?.adoption);
    return answer;
  } finally {
    // The status its client got: none, where it left before any answer (nginx's 499).
    const status =
      answer === undefined ? 500 : inbound.gone ? 499 : isWhole(answer) ? answer.status : 200;
    if (taken === undefined)
      deps.metrics.apiAnswers.inc({ endpoint: kind, status: String(status) });
    // A stream's trace ends with its last byte (serve-admitted.ts), a background response's
    // with its run (background.ts); every other answer is final.
    if (answer === undefined || (isWhole(answer) && answer.detached !== true)) {
      if (answer === undefined) trace.answered(500, 'internal_error');
      else trace.answered(answer.status, answer.headers['x-goodput-reason']);
      trace.end(deps.nowMs());
    }
  }
}

async function complete(
  kind: Endpoint,
  inbound: Inbound,
  deps: CompletionsDeps,
  id: string,
  trace: RequestTrace,
  outgoing: ServerResponse | undefined,
  adoption: Adoption | undefined,
): Promise<Answer> {
  const live = deps.inFlight.enter();
  let streaming = false;
  const ended = () => live.leave();
  let tenant: string | null = null;
  try {
    // Handed over, it was authenticated where it came.
    tenant = adoption?.tenant ?? authenticate(inbound, deps.keys);
    if (deps.shedding()) return shed(inbound, id, tenant, deps);
    const headers = parseClientHeaders(inbound.header, deps.epochMs());
    tenant = tenantFor(tenant, headers.fairness, deps.keys.required, deps.policy.tenants);
    const policyTenant = lookupTenant(deps.policy.tenants, tenant);
    const asked = headers.sloClass ?? policyTenant?.defaultClass ?? 'interactive';
    // A deadline out of reach is refused unread, from the headers or while the body uploads;
    // so is any request the queue alone rules out, whatever its body asks — unless the request
    // carries an idempotency key, whose answer the door may hold from an earlier attempt.
    let deadlineMs: Ms | undefined;
    // The queue's refusal of the class asked for, held while the body may name another.
    let untiered: Rejection | undefined;
    if (headers.idempotencyKey === undefined) {
      const nowMs = deps.nowMs();
      if (headers.deadlineEpochMs !== undefined) deadlineMs = clientDeadline(headers, nowMs, deps);
      // A gateway draining says so (below), whatever its queue.
      const queue = deps.inFlight.draining
        ? {}
        : queueVerdict(unreadClasses(deps.policy, headers, asked), tenant, kind, inbound, deps);
      untiered = queue.untiered;
      const refusal = deps.gateway.pipeline.refusedUnread(deadlineMs, nowMs) ?? queue.refusal;
      if (refusal !== undefined) {
        const req = unreadRequest(id, nowMs, tenant, asked, deadlineMs, headers.attempt);
        return refusedUnread(inbound, req, refusal, deps);
      }
    }
    let bodyText: string;
    try {
      bodyText = await inbound.body(
        deps.bodyLimitBytes,
        deadlineMs === undefined
          ? undefined
          : { atMs: deps.gateway.pipeline.outOfReachAt(deadlineMs), timers: deps.timers },
      );
    } catch (e) {
      if (!(e instanceof UploadOverdue)) throw e;
      // Answered at the deadline, not whenever the slow upload ends.
      const req = unreadRequest(id, deps.nowMs(), tenant, asked, deadlineMs, headers.attempt);
      return refusedUnread(inbound, req, OUT_OF_REACH, deps);
    }
    if (untiered !== undefined && !mayNameTier(bodyText)) {
      // A body that names no tier is in the class asked for, which the queue rules out.
      const req = unreadRequest(id, deps.nowMs(), tenant, asked, deadlineMs, headers.attempt);
      return refusedUnread(inbound, req, untiered, deps);
    }
    // A Responses request that follows a stored response is the whole conversation so far.
    const models = modelsOf(policyTenant, deps.servedModels);
    const read = truncated(
      await continued(readRequest(kind, bodyText, deps, models), tenant, deps),
      deps,
    );
    const { parsed, responses } = read;
    const cls = classOfTier(read.tier, deps.policy, headers, asked);
    const made = policyRequest(
      id,
      upstreamKind(kind),
      read,
      headers,
      tenant,
      cls,
      deps,
      inbound.queuedSinceMs,
    );
    // Taken over, it arrived where it was asked, and was demand there.
    const req = adoption === undefined ? made : { ...made, handedOver: true as const };
    trace.read(req, parsed.model, headers.targets);
    const refused = (rejection: Rejection, shared: boolean, words?: Words) => {
      trace.decided('reject', rejection.reason, deps.nowMs());
      const told = deps.gateway.refuse(req, rejection, { shared, unread: false });
      return named(refusalOf(told, words), id);
    };
    if (deps.inFlight.draining) return refused(SHUTTING_DOWN, false);
    if (read.refusal !== undefined) return refused(read.refusal, true);
    trace.admitting(deps.nowMs());
    // A request not allowed at all (an unknown tenant, a prompt no context holds) asks no quota.
    const pipeline = deps.gateway.pipeline;
    const entry = pipeline.door(req);
    if (entry.refusal !== undefined) {
      const words = wordsFor(entry.refusal, req, askedOf(kind, parsed, policyTenant));
      return refused(entry.refusal, false, words);
    }
    const { charge } = entry;
    // Where a retry stands at a turn kept for it, here or by another replica.
    const turn = await deps.turns.lookup(req, deps.nowMs());
    const door =
      policyTenant === undefined
        ? OPEN_DOOR
        : await atTheDoor(deps.store, {
            tenant: policyTenant,
            requestId: id,
            tokens: charge,
            // The retry budget charges the retries a client declares, not the SDKs' own, which
            // come after the Retry-After they were told, nor one that comes for its kept turn.
            attempt: headers.sdkRetry || turn?.standing.due === true ? 1 : headers.attempt,
            idempotencyKey: headers.idempotencyKey,
            fingerprint:
              headers.idempotencyKey === undefined ? undefined : fingerprint(kind, cls, bodyText),
          });
    if (door.kind === 'replay') return replayed(door.answer, tenant, deps.background, outgoing);
    // Its tenant's quotas as they stand, which every answer tells (quota-headers.ts).
    const quota = quotaHeaders(door.standing);
    if (door.kind === 'refused') {
      const window = policyTenant?.quotas.tokensPerWindow;
      // A charge no window holds: told what it is, and the window's size.
      const words =
        door.message !== undefined
          ? { message: door.message }
          : door.rejection.final === true && window !== undefined
            ? beyondWindowWords(req, charge, window, askedOf(kind, parsed, policyTenant))
            : undefined;
      deps.turns.decided(req, turn, door.rejection);
      return told(refused(door.rejection, true, words), quota);
    }
    let served: Served | undefined;
    try {
      const serving = {
        pass: door.pass,
        live,
        keep: headers.idempotencyKey !== undefined,
        ended: () => {
          ended();
          trace.end(deps.nowMs());
        },
        trace,
        responses,
        keepResponse: keeper(read, req, deps),
        quota,
        turn,
      };
      const { keepResponse } = serving;
      if (responses?.background === true && keepResponse !== undefined) {
        const bg = await serveInBackground(kind, parsed, headers, req, deps, {
          ...serving,
          outgoing,
          responses,
          keepResponse,
          bodyText,
          adoption,
        });
        served = bg.served;
        // Detached, it ends its pass and its stay in flight itself.
        streaming = bg.detached;
        return told(served.response, quota);
      }
      served = await admitAndServe(kind, inbound.signal, parsed, headers, req, deps, {
        ...serving,
        outgoing,
      });
      streaming = served.streaming;
      return told(served.response, quota);
    } finally {
      // A stream gives its pass back when its body ends; every other answer is final here (a
      // request that threw used what it may have: its charge stands).
      if (!streaming) await door.pass.end(served?.keep, served?.usedTokens);
    }
  } catch (e) {
    if (isRequestStopped(e)) {
      // Gone during its upload: nobody reads an answer.
      deps.metrics.cancels.inc({ class: 'none', stage: 'upload', model_name: 'unknown' });
      return named(errorWhole(new OpenAiError(499, 'client closed the request')), id);
    }
    if (!(e instanceof OpenAiError)) throw e;
    const reason = unreadReason(e.status);
    deps.gateway.refuseUnread({ requestId: id, tenant, cls: null, reason, status: e.status });
    return named(errorWhole(e, { 'x-goodput-reason': reason }), id);
  } finally {
    if (!streaming) ended();
  }
}

/**
 * A request the gateway sheds on arrival, its event loop behind (lag-shedder.ts): refused
 * unread, in the class it asked for (or its tenant's default), its headers read no further.
 */
function shed(inbound: Inbound, id: string, tenant: string, deps: CompletionsDeps): Whole {
  const cls =
    askedClass(inbound.header) ??
    lookupTenant(deps.policy.tenants, tenant)?.defaultClass ??
    'interactive';
  const req = unreadRequest(
    id,
    deps.nowMs(),
    tenant,
    cls,
    undefined,
    declaredAttempt(inbound.header),
  );
  return refusedUnread(inbound, req, SHED, deps);
}

/**
 * A request refused before its body is read — shed, or its deadline out of reach (from its
 * headers, or as its body still uploads): its body let go by, yet counted as offered in its
 * class and recorded, like any refusal, under its tenant.
 */
function refusedUnread(
  inbound: Inbound,
  req: LlmRequest,
  rejection: Rejection,
  deps: CompletionsDeps,
): Whole {
  inbound.discard();
  return named(
    refusalOf(deps.gateway.refuse(req, rejection, { shared: false, unread: true })),
    req.id,
  );
}

/** A request as its headers alone tell it: no prompt read; a retry counted as one. */
function unreadRequest(
  id: string,
  arrivalMs: Ms,
  tenant: string,
  sloClass: SloClassName,
  deadlineMs?: Ms,
  attempt = 1,
): LlmRequest {
  const req = { id, arrivalMs, inputTokens: 0, outputTokens: 0, tenant, sloClass, deadlineMs };
  return attempt > 1 ? { ...req, attempt } : req;
}

const SHED: Rejection = {
  outcome: 'reject',
  status: 503,
  reason: 'gateway_overloaded',
  retryAfterMs: 1_000,
};

/** The tenant a request speaks for: its key's, or `default` when the policy needs none. */
export function authenticate(inbound: Inbound, keys: ApiKeys): string {
  if (!keys.required) return 'default';
  const key = bearerToken(inbound.header('authorization'));
  const tenant = key === undefined ? undefined : keys.tenantOf(key);
  if (tenant === undefined) {
    throw new OpenAiError(401, 'missing or invalid API key', null, 'invalid_api_key');
  }
  return tenant;
}
