/**
 * The Responses API's `metadata`, within OpenAI's limits: at most 16 key-value pairs, keys of
 * at most 64 characters, values strings of at most 512. The pairs are counted and the keys
 * measured before any value is judged, so a body of 200,000 pairs is refused for what one of
 * 17 costs; a response keeps its metadata and sends it back in every event that carries the
 * response, so an unbounded one would be stored and streamed again and again.
 */
import { z } from 'zod';
import { describeValue } from './errors.ts';
import { expect, hasProtoKey, isObject, protoKeyIssue, text, type Wording } from './validation.ts';

const METADATA_PAIRS = 16;
const METADATA_KEY_CHARS = 64;
const METADATA_VALUE_CHARS = 512;

const VALUE = `a string of at most ${METADATA_VALUE_CHARS} characters`;

export const metadata = z
  .unknown()
  .check((ctx) => {
    if (!isObject(ctx.value)) return;
    if (hasProtoKey(ctx.value)) return void ctx.issues.push(protoKeyIssue(ctx.value));
    const keys = Object.keys(ctx.value);
    if (keys.length > METADATA_PAIRS) {
      ctx.issues.push({
        code: 'custom',
        input: ctx.value,
        message: `at most ${METADATA_PAIRS} key-value pairs`,
        params: { got: `${keys.length}` } satisfies Wording,
      });
      return;
    }
    const long = keys.find((k) => k.length > METADATA_KEY_CHARS);
    if (long === undefined) return;
    ctx.issues.push({
      code: 'custom',
      input: ctx.value,
      message: `keys of at most ${METADATA_KEY_CHARS} characters`,
      params: { got: `${describeValue(long)} (${long.length})` } satisfies Wording,
    });
  })
  .pipe(
    z.record(
      z.string(),
      text(VALUE).max(METADATA_VALUE_CHARS, expect(VALUE)),
      expect('an object of strings'),
    ),
  );
