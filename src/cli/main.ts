/**
 * The `goodput` command line. Errors of Goodput's own kinds (bad config, bad input) print one
 * clear line and exit 2, as the parser's own usage errors do; anything else is a bug and keeps
 * its stack trace.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { isConfigError, isInputError } from '../core/errors.ts';
import { simulateCommand } from './simulate-command.ts';
import { compareCommand } from './compare-command.ts';
import { engineCommand } from './engine-command.ts';
import { serveCommand } from './serve-command.ts';
import { benchCommand } from './bench-command.ts';
import { capacityCommand } from './capacity-command.ts';
import { policyCommand } from './policy-command.ts';

const program = new Command('goodput')
  .description(
    'Goodput: an SLO control plane for LLM serving, and a deterministic simulator of the fleet behind it',
  )
  .version(packageVersion(), '-V, --version', 'print the version and exit')
  .showHelpAfterError()
  .exitOverride()
  .addCommand(simulateCommand())
  .addCommand(compareCommand())
  .addCommand(engineCommand())
  .addCommand(serveCommand())
  .addCommand(benchCommand())
  .addCommand(capacityCommand())
  .addCommand(policyCommand());

for (const cmd of program.commands) {
  cmd.exitOverride();
  for (const sub of cmd.commands) sub.exitOverride();
}

try {
  await program.parseAsync(process.argv);
} catch (e) {
  // Help and the version asked for exit 0; every other complaint of the parser (an unknown flag,
  // a choice not offered, a missing argument) is a usage error, as ours are.
  if (e instanceof CommanderError) process.exit(e.exitCode === 0 ? 0 : 2);
  if (isConfigError(e) || isInputError(e)) {
    console.error(`goodput: ${e.message}`);
    process.exit(2);
  }
  throw e;
}

function packageVersion(): string {
  const file = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}
