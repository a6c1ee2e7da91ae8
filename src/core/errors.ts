/**
 * Goodput's error kinds. Each is tagged so callers test with a guard, never by message; the CLI
 * and (later) the gateway map kinds to exit codes and HTTP statuses in one place each.
 */

/** A configuration value is invalid: names the dotted path, the bad value and, when known, the file. */
export class ConfigError extends Error {
  readonly kind = 'config' as const;
  readonly path: string;
  readonly expected: string;
  readonly got: unknown;
  readonly file: string | undefined;
  constructor(path: string, expected: string, got: unknown, file?: string) {
    super(
      `${file === undefined ? '' : `${file}: `}${path}: expected ${expected}, got ${formatValue(got)}`,
    );
    this.name = 'ConfigError';
    this.path = path;
    this.expected = expected;
    this.got = got;
    this.file = file;
  }

  /** The same error, located in `file`. */
  inFile(file: string): ConfigError {
    return new ConfigError(this.path, this.expected, this.got, file);
  }
}

/** A line of input (trace, fixture) is malformed: names file, line (1-based) and field. */
export class InputError extends Error {
  readonly kind = 'input' as const;
  readonly file: string;
  readonly line: number;
  readonly field: string;
  constructor(file: string, line: number, field: string, problem: string) {
    // The value a problem quotes is cut as a ConfigError's is: a line may be megabytes long.
    const said =
      problem.length > 2 * SHOWN_CHARS
        ? `${problem.slice(0, 2 * SHOWN_CHARS)}… (${problem.length} characters)`
        : problem;
    super(`${file}:${line}: ${field}: ${said}`);
    this.name = 'InputError';
    this.file = file;
    this.line = line;
    this.field = field;
  }
}

export function isConfigError(e: unknown): e is ConfigError {
  return e instanceof ConfigError;
}

export function isInputError(e: unknown): e is InputError {
  return e instanceof InputError;
}

/** The most of a value a message repeats: enough to know it by, never a whole file. */
const SHOWN_CHARS = 200;

export function formatValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > SHOWN_CHARS
    ? `${text.slice(0, SHOWN_CHARS)}… (${text.length} characters)`
    : text;
}
