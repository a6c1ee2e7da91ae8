#!/usr/bin/env -S node --max-semi-space-size=4
// Entry point for the `goodput` command. Node ≥ 24 runs the TypeScript sources directly;
// `npm ci` installs it as the `node` dev dependency, which `npx goodput` and npm scripts use.
// 4 MiB semi-spaces keep each young-generation collection short. On a large machine V8 grows
// them to 32 MiB, and a gateway holding 500 streams then stops for 10–20 ms per collection,
// every stream at once: a large part of its p99 TTFT and token-gap tail (bench/RESULTS.md).
// Run as `node bin/goodput.js`, pass the flag yourself or set it in NODE_OPTIONS.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(
    `goodput needs Node 24 or newer (this is ${process.version}). Run it through npm, which ` +
      'uses the Node 24 that `npm ci` installed: `npx goodput …` or `npm start`.',
  );
  process.exit(1);
}
// V8's compiled code for the sources is kept on disk (os.tmpdir()/node-compile-cache, or
// NODE_COMPILE_CACHE), so a start after the first compiles none of it: half the start's time.
// Told to the environment, so the threads and processes it starts (the embedded fleet's, an
// engine pool's) keep theirs there too. Where nothing can be written there, it starts as it
// would without.
const { enableCompileCache } = await import('node:module');
const { directory } = enableCompileCache();
if (directory !== undefined) process.env.NODE_COMPILE_CACHE ??= directory;
await import('../src/cli/main.ts');
