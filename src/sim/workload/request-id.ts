/**
 * Request ids: `r` and the request's 1-based position in the workload, zero-padded to six
 * digits (`r000001`), so ids sort with arrival order in reports up to a million requests and
 * are the same on every run of the same workload.
 */
export function requestId(position: number): string {
  return 'r' + String(position).padStart(6, '0');
}
