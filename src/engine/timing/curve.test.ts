// Curves and grids: interpolation inside, clamping below, the stated tails past the end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { curveAt, gridAt, makeCurve, makeGrid } from './curve.ts';

const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} vs ${b}`);

test('curves interpolate linearly, clamp below and follow their tail', () => {
  const lin = makeCurve([1, 3, 7], [2, 4, 12], { kind: 'linear', slope: 0.5 });
  close(curveAt(lin, 0), 2);
  close(curveAt(lin, 1), 2);
  close(curveAt(lin, 2), 3);
  close(curveAt(lin, 3), 4);
  close(curveAt(lin, 6), 10);
  close(curveAt(lin, 9), 13);
  const pow = makeCurve([1, 10], [1, 5], { kind: 'power', exponent: 2 });
  close(curveAt(pow, 20), 20);
});

test('grids are bilinear, clamp below, extend rows as a power law and columns linearly', () => {
  const g = makeGrid(
    [1, 3],
    [0, 10, 20],
    [
      [1, 2, 4],
      [3, 6, 10],
    ],
    1,
  );
  close(gridAt(g, 1, 0), 1);
  close(gridAt(g, 2, 5), (1.5 + 4.5) / 2);
  close(gridAt(g, 0, -5), 1);
  close(gridAt(g, 3, 30), 14);
  close(gridAt(g, 6, 10), 12);
  const sq = makeGrid(
    [1, 2],
    [0, 1],
    [
      [1, 1],
      [2, 2],
    ],
    2,
  );
  close(gridAt(sq, 4, 0), 8);
});
