// An image's tokens as the served model's processor makes them, without the processor: the size
// read from an inline image's header (real files: ImageMagick 6's `convert -size 37x23 xc:red`
// to PNG, GIF, baseline and progressive JPEG; libwebp's `cwebp` to lossless, lossy, and lossy
// with alpha, the extended form), and Qwen2-VL's resize rule of that size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../core/errors.ts';
import {
  imageSize,
  inlineImageSize,
  sizeImage,
  parseImageTokens,
  formatImageTokens,
} from './image-size.ts';
import { qwenTokens } from './image-processors.ts';

/** 37 × 23 pixels each. */
const FILES: Record<string, string> = {
  png:
    'iVBORw0KGgoAAAANSUhEUgAAACUAAAAXAQMAAAC24hTmAAAABGdBTUEAALGPC/xhBQAAACBjSFJNAAB6JgAA' +
    'gIQAAPoAAACA6AAAdTAAAOpgAAA6mAAAF3CculE8AAAABlBMVEX/AAD///9BHTQRAAAAAWJLR0QB/wIt3gAA' +
    'AAd0SU1FB+oMBRMRMOJFgeIAAAAMSURBVAjXY2AYLAAAAIoAATCBhKgAAAAldEVYdGRhdGU6Y3JlYXRlADIw' +
    'MjYtMTItMDVUMTk6MTc6NDgrMDA6MDCbirNpAAAAJXRFWHRkYXRlOm1vZGlmeQAyMDI2LTEyLTA1VDE5OjE3' +
    'OjQ4KzAwOjAw6tcL1QAAAABJRU5ErkJggg==',
  gif:
    'R0lGODlhJQAXAPAAAP8AAAAAACH5BAAAAAAALAAAAAAlABcAAAIbhI+py+0Po5y02ouz3rz7D4biSJbmiabq' +
    'yo4FADs=',
  jpeg:
    '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAYEBQYFBAYGBQYHBwYIChAKCgkJChQODwwQFxQYGBcUFhYaHSUf' +
    'GhsjHBYWICwgIyYnKSopGR8tMC0oMCUoKSj/2wBDAQcHBwoIChMKChMoGhYaKCgoKCgoKCgoKCgoKCgoKCgo' +
    'KCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCj/wAARCAAXACUDASIAAhEBAxEB/8QAFQABAQAAAAAA' +
    'AAAAAAAAAAAAAAf/xAAUEAEAAAAAAAAAAAAAAAAAAAAA/8QAFgEBAQEAAAAAAAAAAAAAAAAAAAYI/8QAFBEB' +
    'AAAAAAAAAAAAAAAAAAAAAP/aAAwDAQACEQMRAD8AnQCOaRAAAAAAAAAAf//Z',
  'progressive jpeg':
    '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAYEBQYFBAYGBQYHBwYIChAKCgkJChQODwwQFxQYGBcUFhYaHSUf' +
    'GhsjHBYWICwgIyYnKSopGR8tMC0oMCUoKSj/2wBDAQcHBwoIChMKChMoGhYaKCgoKCgoKCgoKCgoKCgoKCgo' +
    'KCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCj/wgARCAAXACUDASIAAhEBAxEB/8QAFQABAQAAAAAA' +
    'AAAAAAAAAAAAAAb/xAAWAQEBAQAAAAAAAAAAAAAAAAAABQf/2gAMAwEAAhADEAAAAZwRtIAAAAA//8QAFBAB' +
    'AAAAAAAAAAAAAAAAAAAAMP/aAAgBAQABBQJ//8QAFBEBAAAAAAAAAAAAAAAAAAAAIP/aAAgBAwEBPwFf/8QA' +
    'FBEBAAAAAAAAAAAAAAAAAAAAIP/aAAgBAgEBPwFf/8QAFBABAAAAAAAAAAAAAAAAAAAAMP/aAAgBAQAGPwJ/' +
    '/8QAFBABAAAAAAAAAAAAAAAAAAAAMP/aAAgBAQABPyF//9oADAMBAAIAAwAAABD/AP8A/wD/AP8A/8QAFBEB' +
    'AAAAAAAAAAAAAAAAAAAAIP/aAAgBAwEBPxBf/8QAFBEBAAAAAAAAAAAAAAAAAAAAIP/aAAgBAgEBPxBf/8QA' +
    'FBABAAAAAAAAAAAAAAAAAAAAMP/aAAgBAQABPxB//9k=',
  'lossless webp': 'UklGRhwAAABXRUJQVlA4TA8AAAAvJIAFAAcQ/Y/+ByKi/wEA',
  'lossy webp':
    'UklGRkwAAABXRUJQVlA4IEAAAABQAwCdASolABcAPtFmrFCoJaQipWgBABoJZwDO3oAAK/fDcAD+6zb/7oAF' +
    'P2f/+hJ/8TZ/xNnwcw1BONYUAAAA',
  'extended webp':
    'UklGRnAAAABXRUJQVlA4WAoAAAAQAAAAJAAAFgAAQUxQSAoAAAARB1DAiAhERP8DVlA4IEAAAABQAwCdASol' +
    'ABcAPtFmrFCoJaQipWgBABoJZwDO3oAAK/fDcAD+6zb/7oAFP2f/+hJ/8TZ/xNnwcw1BONYUAAAA',
};
const SIZE = { width: 37, height: 23 };
const dataUrl = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString('base64')}`;

test('each format gives its size from its header, inline or as bytes', () => {
  for (const [format, base64] of Object.entries(FILES)) {
    const bytes = Buffer.from(base64, 'base64');
    assert.deepEqual(imageSize(bytes), SIZE, format);
    assert.deepEqual(inlineImageSize(dataUrl('image/x', bytes)), SIZE, format);
  }
});

test("a JPEG's frame header past a large EXIF segment is still found; nothing else is made up", () => {
  const jpeg = Buffer.from(FILES.jpeg, 'base64');
  const exif = Buffer.alloc(60_004);
  exif.writeUInt16BE(0xffe1, 0);
  exif.writeUInt16BE(60_002, 2);
  const tagged = Buffer.concat([jpeg.subarray(0, 2), exif, jpeg.subarray(2)]);
  assert.deepEqual(inlineImageSize(dataUrl('image/jpeg', tagged)), SIZE);
  assert.equal(inlineImageSize('https://example.com/cat.png'), undefined, 'a URL: not fetched');
  const png = Buffer.from(FILES.png, 'base64');
  assert.equal(imageSize(png.subarray(0, 20)), undefined, 'cut short');
  assert.equal(imageSize(Buffer.from('not an image at all, just text')), undefined);
  assert.equal(inlineImageSize(dataUrl('image/jpeg', tagged.subarray(0, 50_000))), undefined);
});

test("Qwen2-VL's rule: 28-pixel squares within min and max pixels, and the two markers", () => {
  const [min, max] = [56 * 56, 16_384 * 28 * 28];
  assert.equal(qwenTokens(1080, 1920, min, max), 39 * 69 + 2, 'a 1080p screenshot');
  assert.equal(qwenTokens(224, 224, min, max), 8 * 8 + 2);
  assert.equal(qwenTokens(10, 10, min, max), 2 * 2 + 2, 'raised to min_pixels');
  const huge = qwenTokens(8000, 8000, min, max);
  assert.ok(huge <= 16_384 + 2 && huge > 16_000, `lowered to max_pixels: ${huge}`);
  // vLLM's --mm-processor-kwargs '{"max_pixels": 1003520}': 1,280 tokens at most.
  assert.equal(qwenTokens(1080, 1920, min, 1280 * 28 * 28), 26 * 47 + 2);
});

test("Qwen3-VL's rule: 32-pixel squares within its processor's 65,536 and 16,777,216 pixels", () => {
  const rule = parseImageTokens('qwen3-vl');
  assert.deepEqual(rule, {
    rule: 'qwen3-vl',
    params: { min_pixels: 65_536, max_pixels: 16_777_216 },
    urlTokens: 16_384 + 2,
  });
  const [min, max] = [65_536, 16_777_216];
  assert.equal(qwenTokens(1080, 1920, min, max, 32), 34 * 60 + 2, 'a 1080p screenshot');
  assert.equal(qwenTokens(224, 224, min, max, 32), 8 * 8 + 2, 'raised to min_pixels: 256 × 256');
  assert.equal(qwenTokens(10, 10, min, max, 32), 8 * 8 + 2);
  assert.equal(qwenTokens(8000, 8000, min, max, 32), 128 * 128 + 2, 'lowered to 4,096 × 4,096');
  const png = dataUrl('image/png', Buffer.from(FILES.png, 'base64'));
  // 37 × 23, raised to min_pixels with its aspect: 352 × 224.
  assert.deepEqual(sizeImage(rule, png), { tokens: 11 * 7 + 2, least: 11 * 7 + 2, sized: true });
  const url = sizeImage(rule, 'https://example.com/a.png');
  assert.deepEqual(url, { tokens: 16_386, least: 8 * 8 + 2, sized: false });
  assert.equal(
    formatImageTokens(rule),
    'qwen3-vl:min_pixels=65536,max_pixels=16777216,url_tokens=16386',
  );
  assert.deepEqual(parseImageTokens(formatImageTokens(rule)), rule);
});

test('--image-tokens: a figure, or qwen2-vl with its parameters; anything else named', () => {
  assert.deepEqual(parseImageTokens('576'), { rule: 'fixed', tokens: 576 });
  const qwen = parseImageTokens('qwen2-vl');
  assert.deepEqual(qwen, {
    rule: 'qwen2-vl',
    params: { min_pixels: 3136, max_pixels: 12_845_056 },
    urlTokens: 16_386,
  });
  const capped = parseImageTokens('qwen2-vl:max_pixels=1003520,url_tokens=700');
  assert.deepEqual([capped.rule === 'qwen2-vl' && capped.urlTokens], [700]);
  const png = dataUrl('image/png', Buffer.from(FILES.png, 'base64'));
  assert.equal(sizeImage(qwen, png).tokens, 2 * 3 + 2, '37 × 23, raised to min_pixels: 56 × 84');
  assert.equal(sizeImage(qwen, 'https://example.com/a.png').tokens, 16_386);
  assert.equal(sizeImage(capped, 'https://example.com/a.png').tokens, 700);
  assert.equal(sizeImage(parseImageTokens('576'), png).tokens, 576);
  for (const bad of [
    '0',
    '-3',
    '1.5',
    'qwen4-vl',
    'qwen3-vl:min_pixels=-1',
    'qwen2-vl:max_pixels=0',
    'qwen2-vl:dpi=3',
    'qwen2-vl:min_pixels=9,max_pixels=4',
  ]) {
    assert.throws(
      () => parseImageTokens(bad),
      (e: unknown) => isConfigError(e) && e.path === '--image-tokens' && e.got === bad,
      bad,
    );
  }
});

test('what an image is sure to take: exactly, when its size is read; the fewest any takes, by URL; none for a figure', () => {
  const qwen = parseImageTokens('qwen2-vl:url_tokens=1000');
  const png = dataUrl('image/png', Buffer.from(FILES.png, 'base64'));
  assert.deepEqual(sizeImage(qwen, png), { tokens: 8, least: 8, sized: true });
  assert.deepEqual(sizeImage(qwen, 'https://example.com/a.png'), {
    tokens: 1000,
    least: 4 + 2,
    sized: false,
  });
  assert.deepEqual(sizeImage(parseImageTokens('576'), png), {
    tokens: 576,
    least: 0,
    sized: false,
  });
});

test('a header with a side of 0, or past 200 to 1, is sized as an image it cannot read', () => {
  const qwen = parseImageTokens('qwen2-vl:url_tokens=500');
  const png = (width: number, height: number) => {
    const b = Buffer.from(FILES.png, 'base64');
    b.writeUInt32BE(width, 16);
    b.writeUInt32BE(height, 20);
    return dataUrl('image/png', b);
  };
  for (const [w, h] of [
    [0, 0],
    [0, 100],
    [4_294_967_295, 1],
  ]) {
    assert.deepEqual(
      sizeImage(qwen, png(w, h)),
      { tokens: 500, least: 6, sized: false },
      `${w}×${h}`,
    );
  }
  assert.deepEqual(sizeImage(qwen, png(2000, 10)), { tokens: 71 + 2, least: 73, sized: true });
});
