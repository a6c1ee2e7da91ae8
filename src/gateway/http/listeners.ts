/**
 * The gateway's listening sockets: several on its one port, so that a flood does not hold new
 * connections in the kernel's accept queue.
 *
 * Node accepts one connection per listening socket each time its loop polls. Under a keep-alive
 * flood a poll hands the loop a thousand ready sockets and comes back every 30 ms or so, so one
 * listening socket accepts ~30 connections a second: on a 2-core VM, 1,500 closed-loop
 * connections to a bare Node 503 server kept its accept queue full and the median new
 * connection waited 4 s before any code of the server saw it (bench/RESULTS.md, "New
 * connections accepted"). The gateway cannot see that wait, so its admission cannot count it.
 * With LISTENERS sockets bound to the port with SO_REUSEPORT (Linux), the kernel spreads new
 * connections over them and each poll accepts up to one per socket: the same run's median wait
 * was 0.5 s with 32. What is accepted then waits in the connection intake, where the gateway
 * sees and counts it.
 *
 * SO_REUSEPORT would also let a second process of the same user bind the port and take half the
 * connections without an error, so a port asked for by number is first bound alone, to be sure
 * it is free.
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ConfigError } from '../../core/errors.ts';
import type { OpsLog } from '../ops-log.ts';
import type { ConnectionIntake } from './connection-intake.ts';
import { answerConnect, answerUnparsed, type RefuseUnparsed } from './unparsed.ts';

/** Listening sockets on the port where the platform can share one (Linux), else one. */
export const LISTENERS = process.platform === 'linux' ? 32 : 1;

/**
 * Connections the kernel may hold before the gateway accepts them, per listening socket (Node's
 * default is 511): a burst of thousands of clients connecting at once is then answered, not left
 * to retry its SYN after a second. The kernel caps it at net.core.somaxconn.
 */
export const LISTEN_BACKLOG = 4096;

/** The listening servers, as one. */
export class Listeners {
  readonly #servers: readonly Server[];
  readonly port: number;

  constructor(servers: readonly Server[]) {
    this.#servers = servers;
    this.port = (servers[0].address() as AddressInfo).port;
  }

  /** Stops accepting; resolves once every connection has closed. */
  close(): Promise<void> {
    return Promise.all(
      this.#servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
    ).then(() => undefined);
  }

  closeAllConnections(): void {
    for (const s of this.#servers) s.closeAllConnections();
  }

  closeIdleConnections(): void {
    for (const s of this.#servers) s.closeIdleConnections();
  }
}

export interface ListenDeps {
  readonly log: OpsLog;
  /** Paces the reading of new connections; without it, they are read as Node accepts them. */
  readonly intake?: ConnectionIntake;
  /** Counts and records a request Node could not parse, under the id returned. */
  readonly refuseUnparsed: RefuseUnparsed;
}

/**
 * Listens on `host:port`; a port that cannot be taken is a ConfigError naming it. Requests Node
 * cannot parse (headers over its limit, malformed HTTP) are answered in OpenAI's shape, counted
 * and recorded (unparsed.ts).
 */
export async function listen(
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  host: string,
  port: number,
  deps: ListenDeps,
): Promise<Listeners> {
  const shared = LISTENERS > 1;
  if (shared && port !== 0) await bindAlone(host, port);
  const first = await listenOne(listener, host, port, shared, deps);
  const servers = [first];
  const bound = (first.address() as AddressInfo).port;
  try {
    for (let i = 1; i < LISTENERS; i++)
      servers.push(await listenOne(listener, host, bound, true, deps));
  } catch (e) {
    await new Listeners(servers).close();
    throw e;
  }
  return new Listeners(servers);
}

function listenOne(
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  host: string,
  port: number,
  reusePort: boolean,
  { log, intake, refuseUnparsed }: ListenDeps,
): Promise<Server> {
  // A head without Host is the listener's to refuse, counted and recorded (node-listener.ts).
  const server = createServer({ requireHostHeader: false }, listener);
  if (intake !== undefined) {
    // Accepted unread: the intake lets each connection in (resumes it) at the loop's pace.
    // Node's http.Server is a net.Server, which reads this option at each accept.
    (server as Server & { pauseOnConnect: boolean }).pauseOnConnect = true;
    server.on('connection', (socket: Socket) => intake.take(socket));
  }
  // `Expect: 100-continue` is answered by the listener, once it knows the body is to be read;
  // any other expectation it refuses (417), as it refuses CONNECT (405), counted and recorded.
  server.on('checkContinue', listener);
  server.on('checkExpectation', listener);
  server.on('connect', (_req: IncomingMessage, socket: Duplex) =>
    answerConnect(socket, refuseUnparsed),
  );
  server.on('clientError', (e: NodeJS.ErrnoException, socket: Duplex) =>
    answerUnparsed(e, socket, refuseUnparsed),
  );
  return new Promise<Server>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(listenRefused(e, host, port)));
    server.listen({ port, host, backlog: LISTEN_BACKLOG, reusePort }, () => {
      server.removeAllListeners('error');
      // Once listening, a server error (accepting a connection failed) is logged; it serves on.
      server.on('error', (e: NodeJS.ErrnoException) =>
        log.error({ err: e, code: e.code }, `server error: ${e.message}`),
      );
      resolve(server);
    });
  });
}

/** Binds `host:port` without SO_REUSEPORT and lets it go: a ConfigError if another holds it. */
function bindAlone(host: string, port: number): Promise<void> {
  const probe = createServer();
  return new Promise<void>((resolve, reject) => {
    probe.once('error', (e: NodeJS.ErrnoException) => reject(listenRefused(e, host, port)));
    probe.listen({ port, host }, () => probe.close(() => resolve()));
  });
}

/** Why `host:port` cannot be listened on, naming the flag at fault. */
export function listenRefused(
  e: NodeJS.ErrnoException,
  host: string,
  port: number,
  portFlag = '--port',
): ConfigError {
  const code = e.code ?? e.message;
  if (HOST_ERRORS.has(code)) {
    return new ConfigError('--host', `an address of this machine to listen on (${code})`, host);
  }
  const why = code === 'EADDRINUSE' ? 'a free port' : `a port it may listen on (${code})`;
  return new ConfigError(portFlag, why, port);
}

/** Errors of the address, not the port: no such name, or not an address of this machine. */
const HOST_ERRORS = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EADDRNOTAVAIL',
  'EAFNOSUPPORT',
]);

/**
 * Every connection takes a file descriptor. Below the listen backlog's worth, a flood the
 * kernel has already accepted is dropped in silence once the process runs out (libuv accepts and
 * closes what it cannot keep), so a low limit is said at start, with how to raise it.
 */
export function warnOnOpenFileLimit(log: OpsLog): void {
  const soft = openFileLimit();
  if (soft === undefined || soft >= LISTEN_BACKLOG) return;
  log.warn(
    { open_files_limit: soft },
    `open-file limit ${soft}: connections past it are dropped unanswered; raise it (ulimit -n ${LISTEN_BACKLOG * 16} or LimitNOFILE)`,
  );
}

/**
 * The process's limit on open files, from /proc (Linux; undefined elsewhere): its soft limit,
 * which Node lifts to the hard one as it starts.
 */
function openFileLimit(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line?.split(/\s{2,}/)[1];
    return soft === undefined || soft === 'unlimited' ? undefined : Number(soft);
  } catch {
    return undefined;
  }
}
