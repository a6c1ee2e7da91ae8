/**
 * The conformance suite of `SharedStore`'s kept responses, their events, the replicas' beats and
 * the handed-over orders, checked the same way over every store that answers for all of them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESPONSE_MAX_BYTES, type SharedStore } from './shared-store.ts';
import { WINDOW, fresh } from './store-conformance.ts';

/**
 * The kept responses' rules (`saveResponse`, `loadResponse`, `deleteResponse`, the events of
 * `appendEvents` and `readEvents`, the replicas' `beat`), over every store
 * that answers for all of them (a failover store whose primary is down does not: its own tests
 * say what it answers).
 */
export function responseStoreConformance(name: string, store: () => SharedStore): void {
  test(`${name}: a kept response is its tenant's alone, until deleted`, async () => {
    const s = store();
    const [t, other] = [fresh(), fresh()];
    const text = JSON.stringify({ output: 'Ünïcödé ✓ 😀', n: t });
    assert.equal(await s.saveResponse(t, 'resp_1', text), true);
    assert.equal(await s.loadResponse(t, 'resp_1'), text);
    assert.equal(await s.loadResponse(other, 'resp_1'), undefined, "another tenant's load");
    assert.equal(await s.deleteResponse(other, 'resp_1'), false, "another tenant's delete");
    assert.equal(await s.loadResponse(t, 'resp_1'), text, 'still kept');
    assert.equal(await s.loadResponse(t, 'resp_2'), undefined, 'never kept');
    const prefix = await s.loadResponsePrefix(t, 'resp_1', 12);
    assert.ok(prefix !== undefined && text.startsWith(prefix.slice(0, 12)) && prefix.length >= 12);
    assert.equal(text.startsWith(prefix), true, 'a beginning of it');
    assert.equal(await s.loadResponsePrefix(t, 'resp_1', 10_000), text, 'shorter: all of it');
    assert.equal(await s.loadResponsePrefix(other, 'resp_1', 10), undefined, "another tenant's");
    // Characters of 2, 3 and 4 bytes: the first asked for come whole, whatever follows.
    const wide = `{"t":"${'é✓😀'.repeat(50)}"}`;
    assert.equal(await s.saveResponse(t, 'resp_wide', wide), true);
    for (const chars of [1, 7, 8, 9, 40, 41]) {
      const got = (await s.loadResponsePrefix(t, 'resp_wide', chars)) ?? '';
      assert.equal(got.slice(0, chars), wide.slice(0, chars), String(chars));
    }
    assert.equal(await s.saveResponse(t, 'resp_1', '{"again":true}'), true);
    assert.equal(await s.loadResponse(t, 'resp_1'), '{"again":true}', 'kept again, the newer');
    assert.equal(await s.deleteResponse(t, 'resp_1'), true);
    assert.equal(await s.loadResponse(t, 'resp_1'), undefined, 'deleted');
    assert.equal(await s.deleteResponse(t, 'resp_1'), false, 'deleted already');
  });

  test(`${name}: a stream's events are read back in order, its tenant's alone`, async () => {
    const s = store();
    const [t, other] = [fresh(), fresh()];
    const events = Array.from({ length: 7 }, (_, i) => `event: e\ndata: {"n":${i},"s":"ü"}\n\n`);
    assert.deepEqual(await s.readEvents(t, 'resp_s', 0, 10), [], 'no log yet');
    await s.appendEvents(t, 'resp_s', events.slice(0, 3));
    await s.appendEvents(t, 'resp_s', []);
    await s.appendEvents(t, 'resp_s', events.slice(3));
    assert.deepEqual(await s.readEvents(t, 'resp_s', 0, 100), events);
    assert.deepEqual(await s.readEvents(t, 'resp_s', 2, 3), events.slice(2, 5), 'a page');
    assert.deepEqual(await s.readEvents(t, 'resp_s', 7, 10), [], 'past its end');
    assert.deepEqual(await s.readEvents(t, 'resp_s', -1, 1), events.slice(6), 'its last');
    assert.deepEqual(await s.readEvents(t, 'resp_s', -2, 5), events.slice(5), 'from its end');
    assert.deepEqual(await s.readEvents(other, 'resp_s', 0, 10), [], "another tenant's");
    assert.equal(await s.saveResponse(t, 'resp_s', '{"status":"completed"}'), true);
    assert.deepEqual(await s.readEvents(t, 'resp_s', 6, 10), events.slice(6), 'kept again');
    assert.equal(await s.deleteResponse(t, 'resp_s'), true);
    assert.deepEqual(await s.readEvents(t, 'resp_s', 0, 10), [], 'deleted with its response');
  });

  // Told over a connection of Redis's own, a watcher's word is awaited, never timed: the
  // runner's timeout is the guard.
  test(
    `${name}: a log's watcher is told what it takes, from which index, until it stops watching`,
    { timeout: 10_000 },
    async () => {
      const s = store();
      const t = fresh();
      const told: [number, readonly string[]][] = [];
      let heard = () => {};
      const unwatch = await s.watchEvents(t, 'resp_w', (from, events) => {
        told.push([from, events]);
        heard();
      });
      let otherTold = 0;
      const other = await s.watchEvents(t, 'resp_other', () => otherTold++);
      const events = ['event: a\ndata: {"n":1}\n\n', 'event: b\ndata: {}\n\n', 'event: c\n\n'];
      const both = new Promise<void>((r) => (heard = () => told.length === 2 && r()));
      await s.appendEvents(t, 'resp_w', events.slice(0, 1));
      await s.appendEvents(t, 'resp_w', events.slice(1));
      await both;
      assert.deepEqual(told, [
        [0, events.slice(0, 1)],
        [1, events.slice(1)],
      ]);
      unwatch();
      // A watcher that comes after hears the next: the one gone, told in order before it, did not.
      let later: (from: number) => void = () => {};
      const next = new Promise<number>((r) => (later = r));
      const again = await s.watchEvents(t, 'resp_w', (from) => later(from));
      await s.appendEvents(t, 'resp_w', ['event: d\n\n']);
      assert.equal(await next, 3);
      assert.equal(told.length, 2, 'no more once it stopped');
      assert.equal(otherTold, 0, "another log's watcher is not told");
      again();
      other();
    },
  );

  test(`${name}: a replica is alive once it beats, and no other is`, async () => {
    const s = store();
    const [replica, other] = [fresh(), fresh()];
    assert.equal(await s.alive(replica), false, 'not yet');
    await s.beat(replica, WINDOW, true);
    assert.equal(await s.alive(replica), true);
    assert.equal(await s.alive(other), false);
    assert.ok((await s.serving()).includes(replica));
    await s.beat(other, WINDOW, false);
    assert.equal(await s.alive(other), true, 'alive, though it no longer serves');
    assert.ok(!(await s.serving()).includes(other));
    await s.beat(replica, WINDOW, false);
    assert.ok(!(await s.serving()).includes(replica), 'draining, it serves no more');
  });

  test(`${name}: each replica's autoscaling tick is read back by every replica, the last one posted`, async () => {
    const s = store();
    const [replica, other] = [fresh(), fresh()];
    await s.postWindow(replica, '{"tick":1}', WINDOW);
    await s.postWindow(other, '{"tick":7}', WINDOW);
    await s.postWindow(replica, '{"tick":2}', WINDOW);
    const windows = await s.windows();
    assert.deepEqual([windows.get(replica), windows.get(other)], ['{"tick":2}', '{"tick":7}']);
    assert.equal(windows.get(fresh()), undefined, 'none from a replica that posted none');
  });

  test(`${name}: an order kept under its id is taken once, and not once dropped`, async () => {
    const s = store();
    const t = fresh();
    await s.keepOrder(t, 'resp_o', 'order one');
    await s.keepOrder(t, 'resp_p', 'order two');
    assert.equal(await s.takeOrder(fresh(), 'resp_o'), undefined, "another tenant's");
    assert.equal(await s.takeOrder(t, 'resp_o'), 'order one');
    assert.equal(await s.takeOrder(t, 'resp_o'), undefined, 'taken once');
    await s.dropOrder(t, 'resp_p');
    assert.equal(await s.takeOrder(t, 'resp_p'), undefined, 'dropped');
  });

  test(`${name}: one caller alone settles a record at a time`, async () => {
    const s = store();
    const t = fresh();
    assert.equal(await s.settling(t, 'resp_s', WINDOW), true);
    assert.equal(await s.settling(t, 'resp_s', WINDOW), false, 'another, meanwhile');
    assert.equal(await s.settling(t, 'resp_other', WINDOW), true);
    assert.equal(await s.settling(fresh(), 'resp_s', WINDOW), true, "another tenant's");
  });

  test(`${name}: orders handed over are taken oldest first, each once`, async () => {
    const s = store();
    // What other runs left on a shared server is taken first.
    while ((await s.takeHandedOver(100)).length > 0);
    const orders = [fresh(), fresh(), fresh()];
    for (const o of orders) await s.handOver(o);
    assert.deepEqual(await s.takeHandedOver(2), orders.slice(0, 2));
    assert.deepEqual(await s.takeHandedOver(2), orders.slice(2));
    assert.deepEqual(await s.takeHandedOver(2), [], 'each taken once');
  });

  test(`${name}: a response larger than RESPONSE_MAX_BYTES is not kept`, async () => {
    const s = store();
    const t = fresh();
    assert.equal(await s.saveResponse(t, 'resp_big', 'x'.repeat(RESPONSE_MAX_BYTES + 1)), false);
    assert.equal(await s.loadResponse(t, 'resp_big'), undefined);
  });
}
