/** Time, as policy code may read it: milliseconds from an origin the runtime chooses. */
import type { Ms } from '../request/units.ts';

export interface Clock {
  now(): Ms;
}
