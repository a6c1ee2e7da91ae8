/**
 * `--otlp-endpoint` checked at start: the collector's OTLP/HTTP traces URL, http(s), without
 * query, fragment or credentials (a collector that wants a token reads it from
 * OTEL_EXPORTER_OTLP_HEADERS, which the exporter honours). A URL with no path is the collector's
 * root, and gets the traces path every OTLP/HTTP receiver serves, `/v1/traces`; any other path is
 * taken as given. Anything else is a ConfigError naming the flag and the value.
 */
import { ConfigError } from '../../core/errors.ts';

const EXAMPLE = 'an http(s) URL such as http://collector:4318/v1/traces';

export function otlpEndpoint(raw: string, flag = '--otlp-endpoint'): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(flag, EXAMPLE, raw);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(flag, EXAMPLE, raw);
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new ConfigError(flag, 'a URL without query, fragment or credentials', raw);
  }
  const path = url.pathname === '/' ? '/v1/traces' : url.pathname;
  return `${url.origin}${path}`;
}
