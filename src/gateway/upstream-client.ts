/**
 * Requests to one upstream server over HTTP or HTTPS, as its base URL says, on a keep-alive
 * agent of its own. An HTTPS server's certificate is verified against Node's CA store, to which
 * `NODE_EXTRA_CA_CERTS` adds a private CA (read when the process starts).
 */
import http from 'node:http';
import https from 'node:https';

export interface UpstreamClient {
  request(url: string, options: http.RequestOptions): http.ClientRequest;
  /** Closes its sockets. */
  destroy(): void;
}

export function upstreamClient(baseUrl: string, agent: http.AgentOptions): UpstreamClient {
  if (new URL(baseUrl).protocol === 'https:') {
    const tls = new https.Agent(agent);
    return {
      request: (url, options) => https.request(url, { ...options, agent: tls }),
      destroy: () => tls.destroy(),
    };
  }
  const plain = new http.Agent(agent);
  return {
    request: (url, options) => http.request(url, { ...options, agent: plain }),
    destroy: () => plain.destroy(),
  };
}
