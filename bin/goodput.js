#!/usr/bin/env node
// Entry point for the `goodput` command. Node ≥ 24 runs the TypeScript sources directly.
import '../src/cli/main.ts';
