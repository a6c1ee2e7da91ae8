/**
 * An OpenAI-compatible server's base URL as an operator gives it (`serve --backend`, `bench
 * --url`): the server's root, to which callers add `/v1/...` and `/metrics`. An OpenAI-style base ending in `/v1` (what clients are
 * usually given) is taken as its root rather than doubled into `/v1/v1/...`, which would leave
 * the backend never ready. Anything but an http(s) URL without query, fragment or credentials is
 * a ConfigError naming the flag and the value, at start.
 */
import { ConfigError } from '../core/errors.ts';

export function serverBaseUrl(raw: string, flag = '--backend'): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(flag, 'an http(s) URL such as http://10.0.0.5:8000', raw);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(flag, 'an http(s) URL such as http://10.0.0.5:8000', raw);
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new ConfigError(flag, 'a base URL without query, fragment or credentials', raw);
  }
  const path = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return `${url.origin}${path}`;
}
