/**
 * The random streams a workload forks, one per aspect, so that changing one option (say the
 * output lengths) leaves every other aspect's draws exactly as they were.
 */
export const WORKLOAD_STREAMS = {
  arrivals: 'arrivals',
  /** Input lengths, and the row of a joint length-table draw. */
  inputLengths: 'lengths',
  outputLengths: 'lengths.output',
  tenants: 'tenants',
  classes: 'classes',
  toolCalls: 'tool-calls',
  /** Prefix workloads: the sizes of their fixed content and messages, and which content a request uses. */
  prefixShape: 'prefix.shape',
  prefixPick: 'prefix.pick',
  /** The LoRA adapter each request asks for. */
  adapters: 'adapters',
} as const;
