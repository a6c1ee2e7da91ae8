/**
 * The gateway's Prometheus metrics (prom-client, its own registry), all named `goodput_…`.
 * Labels come only from closed sets — class, admission outcome and reason, tenant names from
 * the policy (others fold into `other`), backend names from configuration, and on per-request
 * series `model_name`, the served model or adapter asked for (as inference-gateway dashboards
 * label theirs; anything else is `unknown`) — never from request content. Both denominators
 * are exported: offered and admitted.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import { ArrayHistogram } from './array-histogram.ts';
import { SloMetrics } from './slo-metrics.ts';
import { ScaleMetrics } from './scale-metrics.ts';
import { StateMetrics } from './state-metrics.ts';
import { TurnMetrics } from './turn-metrics.ts';

/** The labels of a request's latency series. */
export type RequestLabel = 'class' | 'model_name';

const LATENCY_BUCKETS = [
  0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 40, 80,
];
/** A whole request's, on to a batch's hour: a reasoning class's 300 s objective is a bucket. */
const E2E_BUCKETS = [...LATENCY_BUCKETS, 120, 300, 600, 1_200, 1_800, 3_600];

export class GatewayMetrics {
  readonly registry = new Registry();
  private readonly tenants: Set<string>;
  private readonly models: ReadonlySet<string>;

  readonly offered = new Counter({
    name: 'goodput_offered_requests_total',
    help: 'Requests offered to the gateway (every attempt: a client retry, or a background response a drained replica handed over, counted again where it is tried), by class and tenant.',
    labelNames: ['class', 'tenant', 'model_name'],
    registers: [this.registry],
  });
  readonly offeredTokens = new Counter({
    name: 'goodput_offered_prompt_tokens_total',
    help: 'Prompt tokens offered (estimated), by class.',
    labelNames: ['class', 'model_name'],
    registers: [this.registry],
  });
  readonly decisions = new Counter({
    name: 'goodput_admission_decisions_total',
    help: 'Admission outcomes (admit, degrade, defer, reject, expire) by reason, class and tenant.',
    labelNames: ['outcome', 'reason', 'class', 'tenant', 'model_name'],
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'goodput_retries_total',
    help: "Attempts after a request's first, wherever they were refused or served: a client's retry (`x-goodput-attempt` > 1) and the gateway's own on another backend after one failed before the first token.",
    labelNames: ['class', 'model_name'],
    registers: [this.registry],
  });
  readonly duplicates = new Counter({
    name: 'goodput_duplicates_total',
    help: 'Attempts refused because the same idempotency key was in flight.',
    registers: [this.registry],
  });
  readonly upstreamFailures = new Counter({
    name: 'goodput_upstream_failures_total',
    help: "Attempts a backend failed, by backend and when: before_first_token (tried on another where it can be, else a 502), streaming (the stream cut with an error event), silent (no token long past its prediction, stopped by its client or deadline). A backend's refusal that is the request's fault is not one.",
    labelNames: ['backend', 'stage'],
    registers: [this.registry],
  });
  readonly cancels = new Counter({
    name: 'goodput_cancels_total',
    help: 'Requests the client abandoned (closed the connection, stopped reading), by where they were: upload, queued, streaming.',
    labelNames: ['class', 'stage', 'model_name'],
    registers: [this.registry],
  });
  readonly good = new Counter({
    name: 'goodput_good_requests_total',
    help: 'Requests completed within every objective of their class.',
    labelNames: ['class', 'model_name'],
    registers: [this.registry],
  });
  readonly goodTokens = new Counter({
    name: 'goodput_good_output_tokens_total',
    help: 'Output tokens of good requests.',
    labelNames: ['class', 'model_name'],
    registers: [this.registry],
  });
  readonly completed = new Counter({
    name: 'goodput_completed_requests_total',
    help: 'Requests that completed (good or not).',
    labelNames: ['class', 'model_name'],
    registers: [this.registry],
  });
  /**
   * Each tenant's weighted service as the fair queue's virtual token counters charge it (the
   * pipeline's, so the metric and the queue order agree): read at scrape time.
   */
  serviceSource: () => Iterable<{ tenant: string; service: number; weight: number }> = () => [];
  costRevision = '';
  readonly tenantService: Counter<'tenant' | 'cost_revision'> = new Counter({
    name: 'goodput_tenant_service_tokens_total',
    help: 'Weighted tokens served per tenant, as the fair queue charges them (policy queueing.cost: prompt tokens when the prefill starts, output tokens as they stream).',
    labelNames: ['tenant', 'cost_revision'],
    registers: [this.registry],
    collect: () => {
      this.tenantService.reset();
      for (const e of this.serviceSource()) {
        this.tenantService.inc(
          { tenant: this.tenant(e.tenant), cost_revision: this.costRevision },
          e.service,
        );
      }
    },
  });
  /** The dispatcher's contract passes, read at scrape time (set by the gateway). */
  passesSource: () => Readonly<Record<string, number>> = () => ({});
  readonly contractPasses: Counter<'reason'> = new Counter({
    name: 'goodput_contract_passes_total',
    help: 'Dispatches made while a higher-priority band had work waiting, by the class contract that allowed it (starvation, min_share, aging, max_share).',
    labelNames: ['reason'],
    registers: [this.registry],
    collect: () => {
      this.contractPasses.reset();
      for (const [reason, n] of Object.entries(this.passesSource())) {
        if (reason !== 'priority') this.contractPasses.inc({ reason }, n);
      }
    },
  });
  readonly priorityInversions: Counter = new Counter({
    name: 'goodput_priority_inversions_total',
    help: 'Dispatches made while a higher-priority band had work waiting that no class contract allowed (expected 0).',
    registers: [this.registry],
    collect: () => {
      this.priorityInversions.reset();
      this.priorityInversions.inc(this.passesSource().priority ?? 0);
    },
  });
  /**
   * Flow control's step share now, and the late gaps that cut it (`gap-feedback.ts`), read at
   * scrape time (set by the gateway).
   */
  gapShareSource: () => { readonly share: number; readonly lateGaps: number } = () => ({
    share: 1,
    lateGaps: 0,
  });
  readonly gapShare: Gauge = new Gauge({
    name: 'goodput_flow_step_gap_share',
    help: 'Share of the tightest token-gap objective flow control lets one engine step take now: the configured share, less what late deliveries cut (dispatch.params.gap_feedback).',
    registers: [this.registry],
    collect: () => this.gapShare.set(this.gapShareSource().share),
  });
  readonly lateGaps: Counter = new Counter({
    name: 'goodput_late_token_gaps_total',
    help: 'Token gaps clients got past gap_feedback.late_ratio of their objective that flow control had not planned (no prefill stall charged to the stream): each may cut the step share.',
    registers: [this.registry],
    collect: () => {
      this.lateGaps.reset();
      this.lateGaps.inc(this.gapShareSource().lateGaps);
    },
  });
  readonly queued = new Gauge({
    name: 'goodput_queued_requests',
    help: 'Admitted requests waiting for dispatch.',
    registers: [this.registry],
  });
  readonly queueAge = new Gauge({
    name: 'goodput_queue_oldest_age_seconds',
    help: 'Age of the longest-waiting admitted request.',
    registers: [this.registry],
  });
  readonly queuedWork = new Gauge({
    name: 'goodput_queued_work_seconds',
    help: 'Predicted GPU work (p90) of the requests waiting for dispatch.',
    registers: [this.registry],
  });
  readonly earliestSlack = new Gauge({
    name: 'goodput_earliest_slack_seconds',
    help: 'Time left before the most urgent waiting request can no longer be served (+Inf when none waits).',
    registers: [this.registry],
  });
  readonly shareDeviation = new Gauge({
    name: 'goodput_tenant_share_deviation',
    help: "A tenant's share of weighted service minus its weight's share, among tenants served.",
    labelNames: ['tenant'],
    registers: [this.registry],
  });
  readonly ttft = this.histogram('goodput_ttft_seconds', 'Time to first token, from arrival.');
  readonly ttftQueue = this.histogram(
    'goodput_ttft_queue_seconds',
    'Part of TTFT spent waiting at the gateway before dispatch.',
  );
  readonly ttftUpstream = this.histogram(
    'goodput_ttft_upstream_seconds',
    "Part of TTFT after dispatch: the backend's queue, prefill and first decode, and the network.",
  );
  // The backend's own split of its part, from backends that report it (the embedded fleet and
  // `goodput engine`); other backends leave these empty.
  readonly ttftBackendQueue = this.histogram(
    'goodput_ttft_backend_queue_seconds',
    "Part of TTFT waiting in the backend's own queue, as the backend reports it.",
  );
  readonly ttftPrefill = this.histogram(
    'goodput_ttft_prefill_seconds',
    'Part of TTFT in prefill before the step that emits the first token, as the backend reports it.',
  );
  readonly ttftFirstDecode = this.histogram(
    'goodput_ttft_first_decode_seconds',
    'Part of TTFT in the step that emits the first token, as the backend reports it.',
  );
  readonly itl = this.histogram(
    'goodput_itl_seconds',
    'Gap between successive streamed tokens, as written to the client.',
  );
  readonly e2e = this.histogram('goodput_e2e_seconds', 'Arrival to last token.', E2E_BUCKETS);
  /** The autoscaler's decision and the pool that acts on it (scale-metrics.ts). */
  readonly scale = new ScaleMetrics(this.registry);
  readonly backendReady = new Gauge({
    name: 'goodput_backend_ready',
    help: '1 when the backend is ready (fresh metrics, healthy), else 0.',
    labelNames: ['backend'],
    registers: [this.registry],
  });
  readonly backendKv = new Gauge({
    name: 'goodput_backend_kv_usage_ratio',
    help: 'KV cache usage reported by the backend, 0..1.',
    labelNames: ['backend'],
    registers: [this.registry],
  });
  readonly backendOthers = new Gauge({
    name: 'goodput_backend_others_requests',
    help: 'Requests running or waiting at the backend that this gateway did not send (another gateway replica, a client of its own), as its last scrape counted: each holds one of its max_num_seqs seats, which flow control leaves to them.',
    labelNames: ['backend'],
    registers: [this.registry],
  });
  readonly backendKvCapacity = new Gauge({
    name: 'goodput_backend_kv_capacity_tokens',
    help: 'Tokens the backend reports its KV cache holds (vLLM: num_gpu_blocks x block_size).',
    labelNames: ['backend'],
    registers: [this.registry],
  });
  readonly backendPrefixHit = new Gauge({
    name: 'goodput_backend_prefix_hit_ratio',
    help: 'Prefix-cache hit rate reported by the backend.',
    labelNames: ['backend'],
    registers: [this.registry],
  });
  readonly backendPace = new Gauge({
    name: 'goodput_backend_pace_ratio',
    help: "The backend's step time over its timing profile's, measured from its streams (1: as profiled); flow control plans its steps at this multiple.",
    labelNames: ['backend'],
    registers: [this.registry],
  });
  readonly backendPreemptions = new Counter({
    name: 'goodput_backend_preemptions_total',
    help: 'Preemptions reported by the backend (its running total, followed across restarts).',
    labelNames: ['backend'],
    registers: [this.registry],
  });
  private readonly breakerStates = new Gauge({
    name: 'goodput_backend_breaker_state',
    help: "The backend's circuit breaker: 1 on its current state (closed, half-open, open), 0 on the others.",
    labelNames: ['backend', 'state'],
    registers: [this.registry],
  });
  readonly breakerTransitions = new Counter({
    name: 'goodput_backend_breaker_transitions_total',
    help: "Changes of a backend's circuit breaker, by the state it went to.",
    labelNames: ['backend', 'to'],
    registers: [this.registry],
  });
  readonly sharedRefusals = new Counter({
    name: 'goodput_shared_refusals_total',
    help: 'Requests refused at the shared state (quotas, retry budget, idempotency, store down), by reason, class and tenant.',
    labelNames: ['reason', 'class', 'tenant', 'model_name'],
    registers: [this.registry],
  });
  readonly invalid = new Counter({
    name: 'goodput_invalid_requests_total',
    help: 'Requests refused before they could be read as one (unauthenticated, malformed, too large, no such route), by reason.',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly apiRequests = new Counter({
    name: 'goodput_api_requests_total',
    help: 'Requests to each completion endpoint as they arrive, whatever became of them: chat, completion (text), responses (the Responses API, served as chat). A background response handed over by a replica that drained is counted where it arrived alone.',
    labelNames: ['endpoint'],
    registers: [this.registry],
  });
  readonly apiAnswers = new Counter({
    name: 'goodput_api_answers_total',
    help: "Answers of each completion endpoint, by the HTTP status the client got (a stream's 200 whatever ended it; the SSE error event that cut one counts under its cause: goodput_upstream_failures_total, goodput_cancels_total, or a deadline's refusal).",
    labelNames: ['endpoint', 'status'],
    registers: [this.registry],
  });
  readonly serverRequests = new Counter({
    name: 'goodput_server_requests_total',
    help: "Requests for a server backend's own endpoints (/tokenize, /detokenize), passed on outside admission, by path and status.",
    labelNames: ['path', 'status'],
    registers: [this.registry],
  });
  readonly draining = new Gauge({
    name: 'goodput_draining',
    help: '1 while the gateway drains before it exits (refusing new requests), else 0.',
    registers: [this.registry],
  });
  /** A backend's count of a prompt over the gateway's plan of it: what --image-tokens is tuned by. */
  readonly promptCounted = new ArrayHistogram<'model_name' | 'images'>({
    name: 'goodput_prompt_tokens_counted_ratio',
    help: "A completed request's prompt tokens as its backend counted them, over the tokens admission planned (the gateway's estimate, scaled by the line goodput_prompt_scale_slope learned; 1: exact; above 1, the plan was short), by whether the prompt held images.",
    labelNames: ['model_name', 'images'],
    buckets: [0.25, 0.5, 0.67, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.25, 1.5, 2, 4],
    registry: this.registry,
  });
  /** The policy's SLOs: `goodput_slo_…` (slo-metrics.ts). */
  readonly slo = new SloMetrics(this.registry);
  /** The shared store's, the learned state's and the kept responses'. */
  readonly state = new StateMetrics(this.registry);
  readonly turns = new TurnMetrics(this.registry);

  /** `models`: the names clients may ask for (the served model and its adapters). */
  constructor(tenants: Iterable<string>, models: Iterable<string> = []) {
    this.tenants = new Set(tenants);
    this.models = new Set(models);
  }

  /** Gauges read at scrape time from the HTTP layer: requests in flight, the loop's lag. */
  httpGauges(
    inFlight: () => number,
    lagSeconds: () => number,
    connectionsWaiting: () => number,
  ): void {
    new Gauge({
      name: 'goodput_in_flight_requests',
      help: 'Requests the gateway is answering (waiting, streaming, or ending).',
      registers: [this.registry],
      collect() {
        this.set(inFlight());
      },
    });
    new Gauge({
      name: 'goodput_event_loop_lag_seconds',
      help: "How late the gateway's event loop runs (smoothed); above resilience.shed_lag_ms it sheds new requests.",
      registers: [this.registry],
      collect() {
        this.set(lagSeconds());
      },
    });
    new Gauge({
      name: 'goodput_connections_waiting',
      help: 'New connections accepted and not yet read: the gateway lets them in at the pace its event loop keeps.',
      registers: [this.registry],
      collect() {
        this.set(connectionsWaiting());
      },
    });
  }

  /** Marks `state` as the backend's breaker state. */
  breakerState(backend: string, state: 'closed' | 'half-open' | 'open'): void {
    for (const s of ['closed', 'half-open', 'open'] as const) {
      this.breakerStates.set({ backend, state: s }, s === state ? 1 : 0);
    }
  }

  /** A reloaded policy's tenants are labels too; those it drops stay, their series going on. */
  knowTenants(names: Iterable<string>): void {
    for (const name of names) this.tenants.add(name);
  }

  /** A tenant as a label: policy names as they are, anything else as `other`. */
  tenant(name: string): string {
    return this.tenants.has(name) || name === 'default' ? name : 'other';
  }

  /** A model as a label: a served name as it is, anything else (or none read) as `unknown`. */
  model(name: string | undefined): string {
    return name !== undefined && this.models.has(name) ? name : 'unknown';
  }

  private histogram(
    name: string,
    help: string,
    buckets: readonly number[] = LATENCY_BUCKETS,
  ): ArrayHistogram<RequestLabel> {
    return new ArrayHistogram({
      name,
      help,
      labelNames: ['class', 'model_name'],
      buckets,
      registry: this.registry,
    });
  }
}
