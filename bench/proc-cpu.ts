// A process's CPU time from Linux's /proc, for benchmarks that charge a server what it spent.
import { readFileSync } from 'node:fs';

/**
 * utime + stime in ms (Linux /proc, 100 ticks per second): of a whole process, or with `tid`
 * of one of its threads (its main thread's id is the process's).
 */
export function cpuMs(pid: number, tid?: number): number {
  const file = tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`;
  const fields = readFileSync(file, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
