/**
 * A request body as text — from a Web-standard Request, or straight from Node's request — read
 * once and bounded: a declared Content-Length over the limit is a
 * 413 before anything is read (Node's parser holds the body to the length declared), a chunked
 * body is counted as it streams and refused as soon as it passes the limit, and bytes that are
 * not UTF-8 are a 400 instead of being replaced. A client that goes away mid-upload is not an
 * error of anyone's: it is `RequestStopped('client_closed')`, counted, never logged as a fault.
 */
import type { IncomingMessage } from 'node:http';
import { decodeUtf8, payloadTooLarge } from '../../openai/index.ts';
import { RequestStopped } from '../stop.ts';

export async function readBody(raw: Request, limitBytes: number): Promise<string> {
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

/** The same from Node's request: its data events, no web stream between. */
export function readNodeBody(req: IncomingMessage, limitBytes: number): Promise<string> {
  const declared = req.headers['content-length'];
  const chunked = declared === undefined || req.headers['transfer-encoding'] !== undefined;
  if (!chunked && Number(declared) > limitBytes) return Promise.reject(payloadTooLarge(limitBytes));
  return new Promise((resolve, reject) => {
    const pieces: Buffer[] = [];
    let total = 0;
    const done = (e?: unknown) => {
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
  });
}
