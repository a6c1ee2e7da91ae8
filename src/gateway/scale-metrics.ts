/**
 * The Prometheus metrics of the gateway's autoscaler, on its registry: its decision for an
 * external actuator (KEDA, an HPA on external metrics), the signals behind it and the decisions
 * by reason, an operator's freeze, and the engine pool that acts on it (local processes or a
 * Kubernetes object): its replicas by state, its drains, the replica counts it set, and whether
 * this gateway is the one that acts on it.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export class ScaleMetrics {
  readonly desiredReplicas: Gauge<'pool'>;
  readonly autoscaleFrozen: Gauge;
  readonly autoscaleSignals: Gauge<'signal'>;
  readonly autoscaleDecisions: Counter<'reason'>;
  readonly autoscalePeers: Gauge;
  readonly poolEngines: Gauge<'state'>;
  readonly poolDrains: Counter<'outcome'>;
  readonly poolResizes: Counter<'result'>;
  readonly poolLeader: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.desiredReplicas = new Gauge({
      name: 'goodput_desired_replicas',
      help: 'Replica groups the autoscaler wants for the pool (ready plus starting).',
      labelNames: ['pool'],
      registers,
    });
    this.autoscaleFrozen = new Gauge({
      name: 'goodput_autoscale_frozen',
      help: '1 while an operator has frozen the autoscaler (PUT /admin/autoscale): its decisions are not taken.',
      registers,
    });
    this.autoscaleSignals = new Gauge({
      name: 'goodput_autoscale_signal',
      help: 'The signals behind the last autoscaling decision, by name (rates in requests per second).',
      labelNames: ['signal'],
      registers,
    });
    this.autoscaleDecisions = new Counter({
      name: 'goodput_autoscale_decisions_total',
      help: 'Autoscaling decisions, by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.autoscalePeers = new Gauge({
      name: 'goodput_autoscale_peers',
      help: 'Other gateway replicas whose demand the last autoscaling decision added to its own (their ticks read from the shared store).',
      registers,
    });
    this.poolEngines = new Gauge({
      name: 'goodput_engine_pool_engines',
      help: 'Replicas of the engine pool (local processes or a Kubernetes object) by state (starting, ready, draining).',
      labelNames: ['state'],
      registers,
    });
    this.poolDrains = new Counter({
      name: 'goodput_engine_pool_drains_total',
      help: 'Replicas the engine pool drained before removing them (drained), and streams a drain time limit cut (cut).',
      labelNames: ['outcome'],
      registers,
    });
    this.poolResizes = new Counter({
      name: 'goodput_engine_pool_resizes_total',
      help: "Replica counts the Kubernetes pool set on its object's scale subresource, by result (ok, or error: sent again at the next decision).",
      labelNames: ['result'],
      registers,
    });
    this.poolLeader = new Gauge({
      name: 'goodput_engine_pool_leader',
      help: "1 while this gateway acts on the engine pool: it holds the pool's Lease (--k8s-lease), or shares the pool with no other gateway.",
      registers,
    });
  }
}
