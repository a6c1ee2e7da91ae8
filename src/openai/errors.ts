/**
 * OpenAI's error wire format: `{ error: { message, type, param, code } }` with the HTTP status
 * OpenAI (and vLLM) answer with. An `OpenAiError` is thrown by request parsing and by servers;
 * one handler turns it into a response. Main rule: the message names the field and the value
 * that was wrong, and `param` names the field, so a client can act on it without guessing.
 */

export interface OpenAiErrorBody {
  readonly error: {
    readonly message: string;
    readonly type: string;
    readonly param: string | null;
    readonly code: string | null;
  };
}

/** OpenAI's `type` for each status it uses; anything else 5xx is a server error. */
const TYPES: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'invalid_request_error',
  409: 'invalid_request_error',
  413: 'invalid_request_error',
  422: 'invalid_request_error',
  429: 'rate_limit_error',
};

export class OpenAiError extends Error {
  readonly kind = 'openai' as const;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  readonly code: string | null;

  constructor(status: number, message: string, param: string | null = null, code?: string | null) {
    super(message);
    this.name = 'OpenAiError';
    this.status = status;
    this.type = errorType(status);
    this.param = param;
    this.code = code ?? null;
  }

  body(): OpenAiErrorBody {
    return errorBody(this.status, this.message, this.param, this.code);
  }
}

function errorType(status: number): string {
  return TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
}

/**
 * An error's body without an Error: for answers made where nothing was thrown (a refusal under
 * overload should not pay for a stack trace it never shows).
 */
export function errorBody(
  status: number,
  message: string,
  param: string | null = null,
  code: string | null = null,
): OpenAiErrorBody {
  return { error: { message, type: errorType(status), param, code } };
}

export function isOpenAiError(e: unknown): e is OpenAiError {
  return e instanceof OpenAiError;
}

/** 400: the request is malformed or asks for something the server cannot do. */
export function invalidRequest(message: string, param: string | null = null, code?: string) {
  return new OpenAiError(400, message, param, code ?? null);
}

/** 404, as OpenAI answers a model it does not serve. */
export function modelNotFound(model: string, served: readonly string[]): OpenAiError {
  return new OpenAiError(
    404,
    `model: expected one of ${served.join(', ')}, got ${describeValue(model)} (the model does not exist)`,
    'model',
    'model_not_found',
  );
}

/** 413: the body is over the server's limit. */
export function payloadTooLarge(limitBytes: number): OpenAiError {
  return new OpenAiError(
    413,
    `request body: expected at most ${limitBytes} bytes, got more`,
    null,
    'payload_too_large',
  );
}

/**
 * 415: a body sent compressed (`Content-Encoding: gzip`, …). Bodies are read as UTF-8 JSON text
 * as sent; decompressing would put a decompression bomb's size past the body limit's reach.
 */
export function unsupportedEncoding(encoding: string): OpenAiError {
  return new OpenAiError(
    415,
    `content-encoding: expected identity (an uncompressed body), got ${JSON.stringify(encoding)}`,
    null,
    'unsupported_media_type',
  );
}

/** The body's `Content-Encoding` unless it is absent or `identity`: that one is a 415. */
export function checkIdentityEncoding(encoding: string | null | undefined): void {
  if (encoding === null || encoding === undefined) return;
  const e = encoding.trim().toLowerCase();
  if (e !== '' && e !== 'identity') throw unsupportedEncoding(encoding);
}

/**
 * The body's `Content-Type` unless it is absent or JSON (`application/json`, or a
 * `application/…+json` type, with any parameters): anything else is a 415 naming it. A body sent
 * as a form or as text is not read as JSON on a guess — vLLM's server (FastAPI) refuses it too,
 * and a browser may send either cross-origin without asking first.
 */
export function checkJsonContentType(type: string | null | undefined): void {
  if (type === null || type === undefined) return;
  const media = type.split(';', 1)[0].trim().toLowerCase();
  if (media === 'application/json' || /^application\/[^/\s]+\+json$/.test(media)) return;
  throw new OpenAiError(
    415,
    `content-type: expected application/json, got ${describeValue(type)}`,
    null,
    'unsupported_media_type',
  );
}

/** 404 for a path the server does not have. */
export function routeNotFound(method: string, path: string): OpenAiError {
  return new OpenAiError(404, `${method} ${path}: no such route`, null, 'not_found');
}

/** 500: the server failed; `code` says how, from a closed set the caller owns. */
export function serverError(message: string, code = 'internal_error'): OpenAiError {
  return new OpenAiError(500, message, null, code);
}

/** A Web-standard JSON response carrying the error, for any runtime. */
export function errorResponse(e: OpenAiError, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(e.body()), {
    status: e.status,
    headers: { ...headers, 'content-type': 'application/json' },
  });
}

/**
 * A value as an error message shows it: JSON, cut short so a huge input cannot bloat the message.
 * Only the part shown is rendered, and only a few levels deep, so neither a 4 MB string nor a
 * value nested thousands of levels costs more than the message (JSON.stringify would copy the
 * first and overflow the stack on the second). Non-finite numbers show as themselves
 * (`Infinity`, from a literal like `1e309`), not as JSON's `null`.
 */
export function describeValue(value: unknown, maxChars = 80): string {
  if (value === undefined) return 'nothing';
  const text = preview(value, maxChars + 1, 0);
  return text.length > maxChars ? `${text.slice(0, maxChars)}…` : text;
}

/** Levels a preview opens before it shows `[…]` or `{…}`: messages name the field, not its innards. */
const PREVIEW_DEPTH = 8;

function preview(value: unknown, budget: number, depth: number): string {
  if (typeof value === 'string') return JSON.stringify(value.slice(0, budget));
  if (typeof value !== 'object' || value === null) return String(value);
  const isArray = Array.isArray(value);
  if (depth >= PREVIEW_DEPTH) return isArray ? '[…]' : '{…}';
  let text = isArray ? '[' : '{';
  let first = true;
  const add = (part: string) => {
    text += (first ? '' : ',') + part;
    first = false;
  };
  if (isArray) {
    for (let i = 0; i < value.length && text.length <= budget; i++) {
      const item: unknown = value[i];
      add(item === undefined ? 'null' : preview(item, budget - text.length, depth + 1));
    }
  } else {
    for (const key in value) {
      if (text.length > budget) break;
      if (!Object.hasOwn(value, key)) continue;
      const item: unknown = (value as Record<string, unknown>)[key];
      if (item === undefined) continue;
      add(
        `${JSON.stringify(key.slice(0, budget))}:${preview(item, budget - text.length, depth + 1)}`,
      );
    }
  }
  return text + (isArray ? ']' : '}');
}
