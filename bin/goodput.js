#!/usr/bin/env node
// Entry point for the `goodput` command. Node ≥ 24 runs the TypeScript sources directly;
// `npm ci` installs it as the `node` dev dependency, which `npx goodput` and npm scripts use.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(
    `goodput needs Node 24 or newer (this is ${process.version}). Run it through npm, which ` +
      'uses the Node 24 that `npm ci` installed: `npx goodput …` or `npm start`.',
  );
  process.exit(1);
}
await import('../src/cli/main.ts');
