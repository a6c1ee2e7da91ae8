// Core's folders form layers: a folder imports only from the layers below its own (not from a
// sibling in it), so no import cycle can form between them. Tests and test kits aside: they may
// reach anywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Lowest first. A file at the top of core counts as its own layer, named by its file name. */
const LAYERS: readonly (readonly string[])[] = [
  ['errors.ts', 'request', 'stats'],
  ['ports'],
  ['slo'],
  ['fleet'],
  ['queueing'],
  ['routing'],
  ['config'],
  ['estimate', 'resilience', 'autoscale'],
  ['admission', 'dispatch'],
  ['observe'],
  ['pipeline-host.ts'],
  ['pipeline.ts'],
];

const CORE = dirname(fileURLToPath(import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') &&
      !e.name.endsWith('.test.ts') &&
      !e.name.endsWith('-test-kit.ts')
      ? [p]
      : [];
  });
}

const unitOf = (file: string) => relative(CORE, file).split(sep)[0];

test('every folder of core has a layer', () => {
  const known = new Set(LAYERS.flat());
  for (const f of sources(CORE)) assert.ok(known.has(unitOf(f)), `${unitOf(f)} has no layer`);
});

test("core's folders import only from the layers below them", () => {
  const level = new Map<string, number>();
  LAYERS.forEach((units, i) => units.forEach((u) => level.set(u, i)));
  const wrong: string[] = [];
  for (const file of sources(CORE)) {
    const from = unitOf(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\bfrom\s+'(\.{1,2}\/[^']+)'/g)) {
      const target = resolve(dirname(file), m[1]);
      if (!target.startsWith(CORE + sep)) continue;
      const to = unitOf(target);
      if (to === from) continue;
      if ((level.get(to) ?? Infinity) >= (level.get(from) ?? -1)) {
        wrong.push(`${relative(CORE, file)} imports ${relative(CORE, target)}`);
      }
    }
  }
  assert.deepEqual(wrong, []);
});
