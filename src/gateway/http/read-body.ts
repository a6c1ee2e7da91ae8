/**
 * A request body as text — from a Web-standard Request, or straight from Node's request — read
 * once and bounded: a declared Content-Length over the limit is a
 * 413 before anything is read (Node's parser holds the body to the length declared), a
 * compressed body or one not declared JSON a 415 (it is read as sent, never inflated), a chunked
 * body is counted as it streams and refused as soon as it passes the limit, and bytes that are
 * not UTF-8 are a 400 instead of being replaced. A client that goes away mid-upload is not an
 * error of anyone's: it is `RequestStopped('client_closed')`, counted, never logged as a fault.
 */
import type { IncomingMessage } from 'node:http';
import type { TimerHandle, Timers } from '../../core/ports/timers.ts';
import type { Ms } from '../../core/request/units.ts';
import {
  checkIdentityEncoding,
  checkJsonContentType,
  decodeUtf8,
  payloadTooLarge,
} from '../../openai/index.ts';
import { RequestStopped } from '../stop.ts';

/** When to stop waiting for a body still uploading: its client's deadline out of reach. */
export interface GiveUp {
  readonly atMs: Ms;
  readonly timers: Timers;
}

/** The body was still uploading when its client's deadline went out of reach. */
export class UploadOverdue extends Error {}

export async function readBody(raw: Request, limitBytes: number, giveUp?: GiveUp): Promise<string> {
  if (giveUp === undefined) return readWebBody(raw, limitBytes);
  let timer: TimerHandle | undefined;
  const overdue = new Promise<never>((_, reject) => {
    timer = giveUp.timers.at(giveUp.atMs, () => reject(new UploadOverdue()));
  });
  try {
    return await Promise.race([readWebBody(raw, limitBytes), overdue]);
  } finally {
    timer?.cancel();
  }
}

async function readWebBody(raw: Request, limitBytes: number): Promise<string> {
  checkIdentityEncoding(raw.headers.get('content-encoding'));
  checkJsonContentType(raw.headers.get('content-type'));
  const declared = raw.headers.get('content-length');
  const chunked = declared === null || raw.headers.get('transfer-encoding') !== null;
  if (!chunked && Number(declared) > limitBytes) throw payloadTooLarge(limitBytes);
  let bytes: Uint8Array;
  try {
    bytes = chunked ? await readCounted(raw, limitBytes) : new Uint8Array(await raw.arrayBuffer());
  } catch (e) {
    if (e instanceof TooLarge) throw payloadTooLarge(limitBytes);
    throw new RequestStopped('client_closed');
  }
  return decodeUtf8(bytes);
}

class TooLarge extends Error {}

async function readCounted(raw: Request, limitBytes: number): Promise<Uint8Array> {
  const body = raw.body;
  if (body === null) return new Uint8Array();
  const reader = body.getReader();
  const pieces: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limitBytes) {
      await reader.cancel().catch(() => {});
      throw new TooLarge();
    }
    pieces.push(value);
  }
  return pieces.length === 1 ? pieces[0] : Buffer.concat(pieces);
}

/** The body's declared length; undefined when it is sent in chunks of no declared total. */
export function declaredBytes(req: IncomingMessage): number | undefined {
  const declared = req.headers['content-length'];
  const chunked = declared === undefined || req.headers['transfer-encoding'] !== undefined;
  return chunked ? undefined : Number(declared);
}

/**
 * The same from Node's request: its data events, no web stream between. With `giveUp`, a body
 * not whole once the bytes that came with its head are parsed is waited for until then only.
 * `reading` is called once the body passed its checks and is about to be read (a client that
 * sent `Expect: 100-continue` is told to send it then, and not before).
 */
export function readNodeBody(
  req: IncomingMessage,
  limitBytes: number,
  giveUp?: GiveUp,
  reading?: () => void,
): Promise<string> {
  try {
    checkIdentityEncoding(req.headers['content-encoding']);
    checkJsonContentType(req.headers['content-type']);
  } catch (e) {
    return Promise.reject(e);
  }
  // A chunked body is counted as it comes.
  if ((declaredBytes(req) ?? 0) > limitBytes) return Promise.reject(payloadTooLarge(limitBytes));
  reading?.();
  return new Promise((resolve, reject) => {
    const pieces: Buffer[] = [];
    let total = 0;
    let settled = false;
    let timer: TimerHandle | undefined;
    const done = (e?: unknown) => {
      settled = true;
      timer?.cancel();
      req.off('data', data);
      req.off('end', end);
      req.off('error', fail);
      req.off('close', closed);
      if (e !== undefined) reject(e);
    };
    const data = (piece: Buffer) => {
      total += piece.length;
      if (total > limitBytes) {
        done(payloadTooLarge(limitBytes));
        // The rest is not read: the answer closes the connection.
        req.resume();
        return;
      }
      pieces.push(piece);
    };
    const end = () => {
      done();
      try {
        resolve(decodeUtf8(pieces.length === 1 ? pieces[0] : Buffer.concat(pieces, total)));
      } catch (e) {
        reject(e);
      }
    };
    const fail = () => done(new RequestStopped('client_closed'));
    const closed = () => {
      if (!req.complete) fail();
    };
    req.on('data', data);
    req.once('end', end);
    req.once('error', fail);
    req.once('close', closed);
    // Called from the request's event, inside the parse of the packet that carried its head: on
    // the next tick that packet is parsed, and a body that came with it is whole. Only one still
    // uploading costs a timer.
    if (giveUp !== undefined) {
      process.nextTick(() => {
        if (settled || req.complete) return;
        timer = giveUp.timers.at(giveUp.atMs, () => done(new UploadOverdue()));
      });
    }
  });
}
