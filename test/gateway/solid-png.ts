// Real PNG images of any size for the image suites and benches, made without an image library:
// one grey, every row filtered none, deflated.
import { crc32, deflateSync } from 'node:zlib';

/**
 * A PNG of one grey (`grey`, 0–255), `width` × `height`, as a data URL; `note` goes in a text
 * chunk, so images of one size and grey can differ (and not share prefix-cache blocks).
 */
export function solidPng(width: number, height: number, grey = 0x80, note = ''): string {
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(4);
    head.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([head, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 0, 0, 0, 0], 8); // 8-bit greyscale
  const rows = Buffer.alloc((width + 1) * height, grey);
  for (let y = 0; y < height; y++) rows[y * (width + 1)] = 0;
  const png = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    ...(note === '' ? [] : [chunk('tEXt', Buffer.from(`Comment\0${note}`, 'latin1'))]),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
  return `data:image/png;base64,${png.toString('base64')}`;
}
