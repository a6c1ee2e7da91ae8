// The const profile: exact step times from a spec string, and strict parsing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../../core/errors.ts';
import { parseConstProfile } from './const-profile.ts';
import { emptyShape, type StepShape } from './profile.ts';

const shape = (p: Partial<StepShape>): StepShape => ({ ...emptyShape(), ...p });

test('step_ms: every non-empty step takes exactly that long', () => {
  const p = parseConstProfile('const:step_ms=10');
  assert.equal(p.name, 'const:step_ms=10');
  assert.equal(p.stepMs(shape({ decodeSeqs: 1, decodeContextTokens: 5 })), 10);
  assert.equal(
    p.stepMs(shape({ prefillTokens: 4096, prefillSeqs: 2, prefillAttnWork: 1e7, decodeSeqs: 200 })),
    10,
  );
  assert.equal(p.stepMs(emptyShape()), 0);
});

test('prefill_ms_per_token + decode_step_ms: D + P × prefill tokens', () => {
  const p = parseConstProfile('const: prefill_ms_per_token = 0.05 , decode_step_ms=10');
  assert.equal(p.name, 'const:prefill_ms_per_token=0.05,decode_step_ms=10');
  assert.equal(p.stepMs(shape({ decodeSeqs: 3 })), 10);
  assert.equal(p.stepMs(shape({ prefillTokens: 1000, prefillSeqs: 1 })), 60);
  assert.equal(p.stepMs(shape({ prefillTokens: 200, prefillSeqs: 1, decodeSeqs: 7 })), 20);
  assert.equal(p.stepMs(emptyShape()), 0);
  assert.equal(
    parseConstProfile('const:decode_step_ms=2.5,prefill_ms_per_token=0').stepMs(
      shape({ prefillTokens: 9 }),
    ),
    2.5,
  );
  assert.equal(parseConstProfile('const:step_ms=1e1').stepMs(shape({ decodeSeqs: 1 })), 10);
});

test('bad specs are ConfigErrors naming profile and the bad part', () => {
  const cases: [string, RegExp][] = [
    ['const:', /step_ms=<ms>/],
    ['const:step_ms', /step_ms=<a number/],
    ['const:step_ms=', /step_ms=<a number/],
    ['const:step_ms=fast', /"step_ms=fast"/],
    ['const:step_ms=-1', /"step_ms=-1"/],
    ['const:step_ms=0', /step_ms > 0/],
    ['const:step_ms=10,step_ms=20', /step_ms given once/],
    ['const:step_ms=10,decode_step_ms=5', /step_ms alone/],
    [
      'const:stepms=10',
      /a key among step_ms, prefill_ms_per_token, decode_step_ms, got "stepms=10"/,
    ],
    ['const:prefill_ms_per_token=0.05', /prefill_ms_per_token=<ms>,decode_step_ms=<ms>/],
    ['const:decode_step_ms=0,prefill_ms_per_token=1', /decode_step_ms > 0/],
    ['const:step_ms=10,', /a key among/],
    ['step_ms=10', /starting with "const:"/],
  ];
  for (const [spec, message] of cases) {
    assert.throws(
      () => parseConstProfile(spec),
      (e: unknown) => isConfigError(e) && e.path === 'profile' && message.test(e.message),
      spec,
    );
  }
});
