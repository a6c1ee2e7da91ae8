/** Admit everything: what a bare vLLM deployment does, and the baseline every gate is judged against. */
import { type Admission } from './admission.ts';
import { ADMIT } from '../request/decision.ts';

export const ADMIT_ALL = 'admit-all';

export function admitAll(): Admission<null> {
  return {
    type: ADMIT_ALL,
    initState: () => null,
    decide: () => ADMIT,
    commit: () => {},
    settle: () => {},
  };
}
