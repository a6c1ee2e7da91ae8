// What kept turns cost each wait prediction: `KeptTurns.ahead` with 2,000 turns kept in one
// fair band, held by 1 to 1,000 tenants, asked 100,000 times for one tenant's new request. The
// order stands in for the fair queue's (a string comparison); the fair queue's own costs a few
// map lookups more per tenant.
// Usage: node bench/kept-turns-cost.ts
import { KeptTurns } from '../src/core/queueing/kept-turns.ts';

const CALLS = 100_000;
const order = { before: (_band: number, other: string, tenant: string) => other <= tenant };
console.log('| tenants holding the 2,000 turns | µs per `ahead` |');
console.log('|---:|---:|');
for (const tenants of [1, 10, 100, 1_000]) {
  const turns = new KeptTurns(60_000);
  for (let i = 0; i < 2_000; i++) turns.keep(`k${i}`, 0, `tenant-${i % tenants}`, 0, 30_000);
  let sum = 0;
  const start = performance.now();
  for (let i = 0; i < CALLS; i++) sum += turns.ahead(0, 1, 'tenant-5', order);
  const us = ((performance.now() - start) * 1_000) / CALLS;
  if (!(sum > 0)) throw new Error('no turn was counted');
  console.log(`| ${tenants.toLocaleString('en-US')} | ${us.toFixed(2)} |`);
}
