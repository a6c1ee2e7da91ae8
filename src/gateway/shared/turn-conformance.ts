/**
 * The conformance suite of `SharedStore`'s kept turns, over every implementation that keeps
 * them (memory-store.test.ts, failover-store.test.ts with its primary up, and
 * test/gateway/redis-store.test.ts): a turn is due when kept for then, a due turn is taken by one
 * caller alone, and every end is told to the watchers, naming who ended it. Nothing waits on
 * time: a turn is kept for now or for a minute ahead.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fresh, WINDOW } from './store-conformance.ts';
import type { SharedStore, TurnEnd } from './shared-store.ts';

/** Ends told to one watcher, of `tenant` alone (the channel is every tenant's). */
async function watching(s: SharedStore, tenant: string) {
  const ends: TurnEnd[] = [];
  let heard = () => {};
  const unwatch = await s.watchTurns((end) => {
    if (end.tenant !== tenant) return;
    ends.push(end);
    heard();
  });
  /** Resolves once `n` ends have been told. */
  const told = (n: number) =>
    new Promise<void>((resolve) => {
      heard = () => ends.length >= n && resolve();
      heard();
    });
  return { ends, told, unwatch };
}

export function turnStoreConformance(name: string, store: () => SharedStore): void {
  // Told over a connection of Redis's own, a watcher's word is awaited, never timed: the
  // runner's timeout is the guard.
  test(
    `${name}: a kept turn is due when kept for, taken once, its end told`,
    { timeout: 10_000 },
    async () => {
      const s = store();
      const t = fresh();
      const w = await watching(s, t);
      assert.equal(await s.takeTurn(t, 'none', 100, 'a'), undefined, 'none kept');
      await s.keepTurn(t, 'k', WINDOW, 2_000);
      const early = await s.takeTurn(t, 'k', 100, 'b');
      assert.equal(early?.due, false, 'not yet due');
      if (early?.due === false) assert.ok(early.inMs > WINDOW - 10_000 && early.inMs <= WINDOW);
      assert.equal(await s.takeTurn(t, 'other', 100, 'b'), undefined, 'another key holds none');
      assert.equal(await s.takeTurn(fresh(), 'k', 100, 'b'), undefined, "another tenant's key");
      // Kept again, for now: the turn it replaces is gone, and a due one is taken once.
      await s.keepTurn(t, 'k', 0, 2_000);
      assert.deepEqual(await s.takeTurn(t, 'k', 100, 'b'), { due: true });
      assert.equal(await s.takeTurn(t, 'k', 100, 'c'), undefined, 'taken already');
      await w.told(1);
      assert.deepEqual(w.ends, [{ by: 'b', outcome: 'claimed', tenant: t, key: 'k' }]);
      w.unwatch();
    },
  );

  test(`${name}: of concurrent takes of a due turn, one gets it`, async () => {
    const s = store();
    const t = fresh();
    await s.keepTurn(t, 'k', 0, 2_000);
    const takes = await Promise.all(['a', 'b', 'c', 'd'].map((by) => s.takeTurn(t, 'k', 100, by)));
    assert.equal(takes.filter((x) => x?.due === true).length, 1);
    assert.equal(takes.filter((x) => x === undefined).length, 3);
  });

  test(
    `${name}: a turn ended is told with its outcome; one not kept, not at all`,
    { timeout: 10_000 },
    async () => {
      const s = store();
      const t = fresh();
      const w = await watching(s, t);
      await s.endTurn(t, 'never', 'dropped', 'a');
      await s.keepTurn(t, 'k1', WINDOW, 2_000);
      await s.keepTurn(t, 'k2', WINDOW, 2_000);
      await s.endTurn(t, 'k1', 'dropped', 'a');
      await s.endTurn(t, 'k2', 'claimed', 'b');
      await s.endTurn(t, 'k2', 'claimed', 'b');
      await w.told(2);
      assert.deepEqual(w.ends, [
        { by: 'a', outcome: 'dropped', tenant: t, key: 'k1' },
        { by: 'b', outcome: 'claimed', tenant: t, key: 'k2' },
      ]);
      assert.equal(await s.takeTurn(t, 'k1', 100, 'c'), undefined, 'ended');
      w.unwatch();
    },
  );
}
