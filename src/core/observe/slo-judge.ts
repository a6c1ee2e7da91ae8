/**
 * Whether a request was good: it completed and every objective its class sets holds. An
 * objective the class leaves undefined is not checked; one that cannot be measured (a token
 * gap for a one-token answer) holds vacuously. `firstMiss` names why a request was not good,
 * so a report can say which objective is costing attainment.
 */
import type { SloObjectives } from '../request/slo-classes.ts';
import { tpotMs, type RequestOutcome } from './request-outcome.ts';

export type Miss = 'not_completed' | 'ttft' | 'e2e' | 'itl' | 'tpot';

export function firstMiss(o: RequestOutcome, slo: SloObjectives): Miss | null {
  if (o.state !== 'completed') return 'not_completed';
  if (slo.ttftMs !== undefined && !((o.ttftMs ?? Infinity) <= slo.ttftMs)) return 'ttft';
  if (slo.e2eMs !== undefined && !((o.e2eMs ?? Infinity) <= slo.e2eMs)) return 'e2e';
  if (slo.itlP99Ms !== undefined && o.itlP99Ms !== undefined && o.itlP99Ms > slo.itlP99Ms)
    return 'itl';
  const tpot = tpotMs(o);
  if (slo.tpotMs !== undefined && tpot !== undefined && tpot > slo.tpotMs) return 'tpot';
  return null;
}

export function isGood(o: RequestOutcome, slo: SloObjectives): boolean {
  return firstMiss(o, slo) === null;
}
