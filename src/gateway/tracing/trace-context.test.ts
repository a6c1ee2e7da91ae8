// W3C trace context as the gateway reads and writes it: what a valid traceparent is (a bad one
// is ignored, never an error), the sampled flag, tracestate carried with it, and the header an
// attempt's span context becomes. And the --otlp-endpoint URL rule.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TraceFlags } from '@opentelemetry/api';
import { isConfigError } from '../../core/errors.ts';
import { otlpEndpoint } from './otlp-endpoint.ts';
import { isTraceparent, remoteParent, traceHeaders } from './trace-context.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

test('a valid traceparent is the remote parent, its flags and tracestate with it', () => {
  const p = remoteParent(`00-${TRACE}-${SPAN}-01`, 'a=1,b=2');
  assert.equal(p?.traceId, TRACE);
  assert.equal(p?.spanId, SPAN);
  assert.equal(p?.isRemote, true);
  assert.equal(p?.traceFlags, TraceFlags.SAMPLED);
  assert.equal(p?.traceState?.get('b'), '2');
  assert.equal(remoteParent(`00-${TRACE}-${SPAN}-00`, null)?.traceFlags, TraceFlags.NONE);
  // A later version may carry more fields; only the sampled flag is read.
  assert.equal(remoteParent(`01-${TRACE}-${SPAN}-03-extra`, null)?.traceFlags, 1);
});

test('anything else is no parent at all', () => {
  for (const bad of [
    '',
    'garbage',
    `00-${TRACE.toUpperCase()}-${SPAN}-01`,
    `00-${'0'.repeat(32)}-${SPAN}-01`,
    `00-${TRACE}-${'0'.repeat(16)}-01`,
    `ff-${TRACE}-${SPAN}-01`,
    `00-${TRACE}-${SPAN}-01-extra`,
    `00-${TRACE}-${SPAN}-1`,
  ]) {
    assert.equal(remoteParent(bad, 'a=1'), undefined, bad);
    assert.equal(isTraceparent(bad), false, bad);
  }
  assert.equal(remoteParent(null, 'a=1'), undefined);
});

test("an attempt's span context as the headers its backend gets", () => {
  const parent = remoteParent(`00-${TRACE}-${SPAN}-01`, 'a=1');
  assert.ok(parent);
  assert.deepEqual(traceHeaders(parent), {
    traceparent: `00-${TRACE}-${SPAN}-01`,
    tracestate: 'a=1',
  });
  assert.deepEqual(traceHeaders({ ...parent, traceFlags: 0, traceState: undefined }), {
    traceparent: `00-${TRACE}-${SPAN}-00`,
  });
});

test('--otlp-endpoint: http(s) only; a bare collector gets /v1/traces; a bad one names the flag', () => {
  assert.equal(otlpEndpoint('http://collector:4318'), 'http://collector:4318/v1/traces');
  assert.equal(otlpEndpoint('https://otel.example/v1/traces'), 'https://otel.example/v1/traces');
  assert.equal(otlpEndpoint('http://c:4318/custom/path'), 'http://c:4318/custom/path');
  for (const bad of ['collector:4318', 'ftp://c/v1/traces', 'http://c/?x=1', 'http://u:p@c']) {
    assert.throws(
      () => otlpEndpoint(bad),
      (e) => isConfigError(e) && e.path === '--otlp-endpoint' && e.got === bad,
      bad,
    );
  }
});
