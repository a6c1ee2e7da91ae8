/** Every admission policy, registered once: type name → factory. */
import type { Admission } from './admission.ts';
import { ADMIT_ALL, admitAll } from './admit-all.ts';

export const ADMISSIONS: Readonly<Record<string, () => Admission>> = {
  [ADMIT_ALL]: admitAll as () => Admission,
};
