/**
 * Where the raw profiling data lives (../shared/data/profiles/vidur by default) and how each
 * file is cited in the fitted JSON: its path in the Vidur repository at a pinned commit.
 */
import { join } from 'node:path';

export const VIDUR = {
  repository: 'https://github.com/microsoft/vidur',
  commit: '7d47513363ec447a741ac5e47241580b47724fbf',
  /** The attention and CPU-overhead profiles come from this older commit of the same repository. */
  historyCommit: '6555c85936d8ecf913622dbb5f8c9a96175126ab',
  licence: 'MIT',
  copyright: 'Copyright (c) Microsoft Corporation.',
} as const;

/** Hugging Face folder names Vidur files its per-model profiles under. */
export const HF_NAMES: Readonly<Record<string, string>> = {
  'llama-3-8b': 'Meta-Llama-3-8B',
  'llama-3-70b': 'Meta-Llama-3-70B',
  'llama-2-7b': 'Llama-2-7b-hf',
  'llama-2-70b': 'Llama-2-70b-hf',
};

export interface SourceFile {
  /** Absolute path on this machine. */
  readonly local: string;
  /** How the fitted JSON cites it: repository path @ short commit. */
  readonly cite: string;
}

export class Sources {
  readonly root: string;
  constructor(dataDir: string) {
    this.root = join(dataDir, 'profiles', 'vidur');
  }
  private file(rel: string, history: boolean): SourceFile {
    // This copy keeps the repository layout, minus data/profiling/ for the snapshot's files.
    const local = history
      ? join(this.root, 'history-6555c85', rel)
      : join(this.root, rel.replace(/^data\/profiling\//, ''));
    const commit = history ? VIDUR.historyCommit : VIDUR.commit;
    return { local, cite: `${rel}@${commit.slice(0, 7)}` };
  }
  mlp(gpu: string, model: string): SourceFile {
    return this.file(`data/profiling/compute/${gpu}/meta-llama/${HF_NAMES[model]}/mlp.csv`, false);
  }
  allReduce(gpu: string): SourceFile {
    return this.file(`data/profiling/network/${gpu}_dgx/all_reduce.csv`, false);
  }
  attention(): SourceFile {
    return this.file('data/profiling/a100/attention.csv', true);
  }
  cpuOverheads(): SourceFile {
    return this.file('data/profiling/a100/cpu_overheads.csv', true);
  }
  licence(): string {
    return join(this.root, 'LICENSE');
  }
}
