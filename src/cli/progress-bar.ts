/**
 * A progress bar on stderr for long runs: appears only when stderr is a terminal and the run
 * has taken over a second, so pipes, CI logs and quick runs stay clean.
 */
import type { Clock } from '../core/ports/clock.ts';
import type { Ms } from '../core/request/units.ts';

export interface ProgressBar {
  update(simMs: Ms, finished: number): void;
  done(): void;
}

export function progressBar(
  stream: NodeJS.WriteStream,
  wall: Clock,
  total: number | undefined,
  label = '',
  /** What the time shown measures: the simulated clock, or the wall clock of a live run. */
  timeWord = 'sim',
): ProgressBar {
  const start = wall.now();
  let shown = false;
  let lastDraw = 0;
  return {
    update(simMs, finished) {
      if (!stream.isTTY) return;
      const now = wall.now();
      if (now - start < 1000 || now - lastDraw < 100) return;
      lastDraw = now;
      shown = true;
      const width = 30;
      const frac = total ? Math.min(1, finished / total) : 0;
      const bar = total
        ? `[${'#'.repeat(Math.round(frac * width)).padEnd(width)}] ${(frac * 100).toFixed(0)}% `
        : '';
      stream.write(
        `\r${label}${bar}${finished.toLocaleString('en-US')} done, ${timeWord} ${(simMs / 1000).toFixed(0)} s `,
      );
    },
    done() {
      if (shown) stream.write('\r\x1b[2K');
    },
  };
}
