// Lint rules. The one that matters most: wall time, timers and entropy live only in src/runtime/,
// so policy code stays deterministic and the simulator stays byte-identical across runs.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const clockAndEntropy = {
  'no-restricted-properties': [
    'error',
    {
      object: 'Date',
      property: 'now',
      message: 'Read time from an injected Clock (src/runtime/ only).',
    },
    {
      object: 'performance',
      property: 'now',
      message: 'Read time from an injected Clock (src/runtime/ only).',
    },
    {
      object: 'Math',
      property: 'random',
      message: 'Use an injected, seeded Rng (src/runtime/ only).',
    },
    {
      object: 'process',
      property: 'hrtime',
      message: 'Read time from an injected Clock (src/runtime/ only).',
    },
  ],
  'no-restricted-globals': [
    'error',
    ...[
      'setTimeout',
      'setInterval',
      'setImmediate',
      'clearTimeout',
      'clearInterval',
      'queueMicrotask',
    ].map((name) => ({ name, message: 'Schedule through injected Timers (src/runtime/ only).' })),
  ],
  'no-restricted-syntax': [
    'error',
    {
      selector: "NewExpression[callee.name='Date'][arguments.length=0]",
      message: 'new Date() reads the wall clock; inject a Clock.',
    },
    {
      // V8 allocates an object literal's accessors in the old generation: what the getter's
      // closure captures then outlives every young-generation collection. Per request or per
      // decision that doubled the gateway's collector work (bench/RESULTS.md).
      selector: "ObjectExpression > Property[kind='get'], ObjectExpression > Property[kind='set']",
      message:
        'No getters or setters in object literals: V8 keeps what they capture past every young-generation collection. Use a class.',
    },
  ],
  'no-restricted-imports': [
    'error',
    {
      paths: [
        'node:timers',
        'node:timers/promises',
        'timers',
        'timers/promises',
        'node:perf_hooks',
        'perf_hooks',
      ],
    },
  ],
};

const pureCore = {
  'no-restricted-imports': [
    'error',
    {
      paths: clockAndEntropy['no-restricted-imports'][1].paths,
      patterns: [
        {
          group: [
            'node:*',
            '**/sim/**',
            '**/gateway/**',
            '**/engine/**',
            '**/runtime/**',
            '**/cli/**',
          ],
          message: 'src/core is pure policy code.',
        },
      ],
    },
  ],
};

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'out/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { console: 'readonly', process: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/runtime/**', 'src/**/*.test.ts'],
    rules: clockAndEntropy,
  },
  { files: ['src/core/**/*.ts'], ignores: ['src/core/**/*.test.ts'], rules: pureCore },
);
