import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../core/errors.ts';
import { serverBaseUrl } from './server-url.ts';

test('a backend URL is its server root: a trailing /v1 or slash goes, a path prefix stays', () => {
  const cases: [string, string][] = [
    ['http://10.0.0.5:8000', 'http://10.0.0.5:8000'],
    ['http://10.0.0.5:8000/', 'http://10.0.0.5:8000'],
    ['http://10.0.0.5:8000/v1', 'http://10.0.0.5:8000'],
    ['http://10.0.0.5:8000/v1/', 'http://10.0.0.5:8000'],
    ['https://gw.example/llama/v1', 'https://gw.example/llama'],
    ['http://[::1]:9000', 'http://[::1]:9000'],
  ];
  for (const [given, root] of cases) assert.equal(serverBaseUrl(given), root, given);
});

test('anything else is a ConfigError naming --backend and the value', () => {
  const cases: [string, RegExp][] = [
    [
      'notaurl',
      /^--backend: expected an http\(s\) URL such as http:\/\/10\.0\.0\.5:8000, got "notaurl"$/,
    ],
    ['ftp://host:21', /expected an http\(s\) URL/],
    ['http://host:1/?x=1', /without query, fragment or credentials, got "http:\/\/host:1\/\?x=1"/],
    ['http://user:pw@host:1', /without query, fragment or credentials/],
  ];
  for (const [given, message] of cases) {
    assert.throws(
      () => serverBaseUrl(given),
      (e) => isConfigError(e) && message.test(e.message),
      given,
    );
  }
});
