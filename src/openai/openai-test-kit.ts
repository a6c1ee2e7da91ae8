// For the wire-format suites: the 400 a parse throws, or a failed test when it throws none.
import assert from 'node:assert/strict';
import { isOpenAiError, type OpenAiError } from './errors.ts';

export function rejection(fn: () => unknown): OpenAiError {
  try {
    fn();
  } catch (e) {
    assert.ok(isOpenAiError(e), String(e));
    return e;
  }
  assert.fail('expected a rejection');
}
