/**
 * The engine's own error kind: an internal invariant broke — a bug, or a driver calling the
 * core out of order. A request the engine cannot serve is never an error; it is an `onFail`.
 */
export class EngineInvariantError extends Error {
  readonly kind = 'engine_invariant' as const;
  constructor(message: string) {
    super(message);
    this.name = 'EngineInvariantError';
  }
}

export function isEngineInvariantError(e: unknown): e is EngineInvariantError {
  return e instanceof EngineInvariantError;
}
