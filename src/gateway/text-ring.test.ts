import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { TextRing } from './text-ring.ts';

test('keeps the newest texts, each for its TTL, at most one per slot', () => {
  const r = new TextRing(2, 1_024, 100);
  r.set('a', 'one', 0);
  r.set('b', 'two', 10);
  r.set('c', 'three', 20);
  assert.equal(r.get('a', 20), undefined, 'evicted: 2 slots');
  assert.equal(r.get('b', 110), 'two');
  assert.equal(r.get('b', 111), undefined, 'expired');
  r.set('c', 'four', 50);
  assert.equal(r.get('c', 149), 'four', 'a text set again is fresh again');
  assert.equal(r.get('nobody', 0), undefined);
});

test('a key set again reads its newest text, and is evicted with it, never by its older one', () => {
  const r = new TextRing(3, 1_024);
  r.set('a', 'a1', 0);
  r.set('b', 'b1', 0);
  r.set('a', 'a2', 0);
  r.set('c', 'c1', 0); // every slot in use: the oldest, a's first, goes, and a stays
  assert.equal(r.get('a', 0), 'a2');
  r.set('d', 'd1', 0); // evicts b
  assert.equal(r.get('b', 0), undefined);
  r.set('e', 'e1', 0); // evicts a's newest
  assert.equal(r.get('a', 0), undefined);
  assert.deepEqual(
    ['c', 'd', 'e'].map((k) => r.get(k, 0)),
    ['c1', 'd1', 'e1'],
  );
});

test('texts wrap around the bytes: never a wrong or torn text, and the newest always kept', () => {
  // A small ring and texts of every width UTF-8 has (1 to 4 bytes a character), so that each
  // wrap and each overwrite happens hundreds of times.
  const slots = 16;
  const r = new TextRing(slots, 600);
  const pieces = ['a', 'é', '€', '😀', '{"k":1}'];
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const last = new Map<string, string>();
  const order: string[] = [];
  for (let i = 0; i < 5_000; i++) {
    const key = `k${rand(40)}`;
    let text = `${i}:`;
    const parts = rand(30);
    for (let j = 0; j < parts; j++) text += pieces[rand(pieces.length)];
    r.set(key, text, i);
    last.set(key, text);
    order.push(key);
    assert.equal(r.get(key, i), text, 'the text just set');
    if (i % 97 !== 0) continue;
    // Whatever is still kept is the key's newest text, and what is kept is the newest keys:
    // once one is gone, every key last set before it is gone too.
    let gone = false;
    const seen = new Set<string>();
    for (let j = order.length - 1; j >= 0; j--) {
      const k = order[j];
      if (seen.has(k)) continue;
      seen.add(k);
      const got = r.get(k, i);
      if (got === undefined) gone = true;
      else {
        assert.equal(got, last.get(k), `${k}: its newest text`);
        assert.ok(!gone, `${k} kept although a newer key was evicted`);
      }
    }
  }
});

test('a text longer than the ring is not kept, and takes nothing with it', () => {
  const r = new TextRing(4, 64);
  r.set('a', 'short', 0);
  r.set('b', 'x'.repeat(100), 0);
  assert.equal(r.get('b', 0), undefined);
  assert.equal(r.get('a', 0), 'short');
});

test('empty texts are kept, and wrap like any other', () => {
  // Each record holds its key's bytes too: the longest here, `k199` and 11 bytes of text, at
  // most 3 bytes a character, fits in 64.
  const r = new TextRing(8, 64);
  for (let i = 0; i < 200; i++) {
    const text = i % 3 === 0 ? '' : `t${i}-${'x'.repeat(i % 7)}`;
    r.set(`k${i}`, text, 0);
    assert.equal(r.get(`k${i}`, 0), text);
    if (i > 0) {
      const before = r.get(`k${i - 1}`, 0);
      if (before !== undefined) assert.ok(before === '' || before.startsWith(`t${i - 1}-`));
    }
  }
});

test("at the gateway's size, every one of the newest keys is found and no older one", () => {
  const slots = 20_000;
  const r = new TextRing(slots, 24 * 1024 * 1024);
  const keys = Array.from({ length: 3 * slots }, () => randomUUID());
  keys.forEach((k, i) => r.set(k, `{"n":${i}}`, 0));
  let found = 0;
  keys.forEach((k, i) => {
    const got = r.get(k, 0);
    if (i < keys.length - slots) assert.equal(got, undefined, `${i}: evicted`);
    else if (got === `{"n":${i}}`) found++;
  });
  assert.equal(found, slots);
});
