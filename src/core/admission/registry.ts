/** Every admission policy, registered once: type name → factory. */
import type { ResolvedPolicy } from '../config/policy.ts';
import type { Admission } from './admission.ts';
import { ADMIT_ALL, admitAll } from './admit-all.ts';
import { GOODPUT_ADMISSION, goodputAdmission } from './goodput-admission.ts';

export const ADMISSIONS: Readonly<Record<string, (policy: ResolvedPolicy) => Admission>> = {
  [ADMIT_ALL]: admitAll as () => Admission,
  [GOODPUT_ADMISSION]: goodputAdmission as (policy: ResolvedPolicy) => Admission,
};
