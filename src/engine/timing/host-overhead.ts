/**
 * The serving engine's host (CPU) cost around each GPU step — scheduling, input preparation,
 * sampling bookkeeping, output processing — and how much of it the GPU's work hides. It
 * belongs to the engine version, not to the GPU profile: vLLM 0.4 paid it between steps, 0.6
 * spread it over multi-step rounds and moved output processing off the critical path, V1
 * overlaps most of it with the step in flight.
 *
 *   host(S)  = (fixedMs + perSeqMs × S) / n       S sequences in the step; n = scheduler steps
 *                                                 for a decode-only step, 1 for one with a prompt
 *   step_ms  = gpu + host − min(overlap × host, gpu)
 *
 * overlap 0 is fully serial (gpu + host); overlap 1 is fully overlapped (max(gpu, host)): a
 * step can never be shorter than the host work that feeds it.
 */
import type { Ms } from '../../core/request/units.ts';
import type { StepShape, TimingProfile } from './profile.ts';

export interface HostOverhead {
  /** Per planned step, whatever it holds. */
  readonly fixedMs: Ms;
  /** Per sequence in the step. */
  readonly perSeqMs: Ms;
  /** Share of the host cost that runs while the GPU computes, in [0, 1]. */
  readonly overlap: number;
}

/** A GPU-only step time: what a fitted profile gives without its own host term. */
export interface GpuStepTime {
  readonly name: string;
  gpuStepMs(shape: StepShape): Ms;
}

export class HostTimedProfile implements TimingProfile {
  readonly name: string;
  readonly gpu: GpuStepTime;
  readonly host: HostOverhead;
  readonly schedulerSteps: number;

  constructor(gpu: GpuStepTime, host: HostOverhead, schedulerSteps: number) {
    this.name = gpu.name;
    this.gpu = gpu;
    this.host = host;
    this.schedulerSteps = schedulerSteps;
  }

  stepMs(s: StepShape): Ms {
    const gpu = this.gpu.gpuStepMs(s);
    if (gpu <= 0) return 0;
    return gpu + this.hostMs(s) - Math.min(this.host.overlap * this.hostMs(s), gpu);
  }

  /** The host cost charged to one step of this shape, before any overlap. */
  hostMs(s: StepShape): Ms {
    const h = this.host;
    const seqs = s.prefillSeqs + s.decodeSeqs;
    const perStep = h.fixedMs + h.perSeqMs * seqs;
    return s.prefillTokens > 0 ? perStep : perStep / this.schedulerSteps;
  }
}
