/**
 * Whether a request was good: it completed and every objective its class sets holds. An
 * objective the class leaves undefined is not checked; one that cannot be measured (a token
 * gap for a one-token answer) holds vacuously.
 */
import type { SloObjectives } from '../request/slo-classes.ts';
import { tpotMs, type RequestOutcome } from './request-outcome.ts';

export function isGood(o: RequestOutcome, slo: SloObjectives): boolean {
  if (o.state !== 'completed') return false;
  if (slo.ttftMs !== undefined && !((o.ttftMs ?? Infinity) <= slo.ttftMs)) return false;
  if (slo.e2eMs !== undefined && !((o.e2eMs ?? Infinity) <= slo.e2eMs)) return false;
  if (slo.itlP99Ms !== undefined && o.itlP99Ms !== undefined && o.itlP99Ms > slo.itlP99Ms)
    return false;
  const tpot = tpotMs(o);
  if (slo.tpotMs !== undefined && tpot !== undefined && tpot > slo.tpotMs) return false;
  return true;
}
