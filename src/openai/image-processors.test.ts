// Pixtral's, Mistral Small 3.1's and InternVL's image rules, each worked by hand from its
// reference: mistral_common's `ImageEncoder._image_to_num_tokens` (a token a patch after an
// image is scaled to fit `max_image_size`, Python's rounding; a break a row, the last an end)
// and InternVL's `dynamic_preprocess` (448-pixel tiles on the closest grid of at most 12, a
// thumbnail beside more than one, 256 tokens a tile, `<img>` and `</img>` around them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConfigError } from '../core/errors.ts';
import { PROCESSORS } from './image-processors.ts';
import { formatImageTokens, parseImageTokens, sizeImage, type SizeRule } from './image-size.ts';

const rule = (text: string) => parseImageTokens(text) as SizeRule;
const tokens = (text: string, width: number, height: number) => {
  const r = rule(text);
  return PROCESSORS[r.rule].tokens({ width, height }, r.params);
};

test('pixtral: a token a 16-pixel patch and a break a row, the image held to 1,024 a side', () => {
  assert.equal(tokens('pixtral', 224, 224), 14 * 14 + 14, 'a thumbnail');
  // 1,920 × 1,080 scaled to 1,024 × 576: 64 columns, 36 rows.
  assert.equal(tokens('pixtral', 1920, 1080), 64 * 36 + 36);
  // 2,048 × 1,025 halves to 1,024 × 512.5, which Python rounds to 512 (to even): 32 rows, not 33.
  assert.equal(tokens('pixtral', 2048, 1025), 64 * 32 + 32);
  assert.equal(tokens('pixtral', 1, 1), 2);
  const pixtral = rule('pixtral');
  assert.equal(pixtral.urlTokens, 64 * 64 + 64, 'the most: 1,024 × 1,024');
  assert.equal(PROCESSORS.pixtral.fewest(pixtral.params), 2);
  // An extreme aspect keeps a side of one pixel.
  assert.equal(tokens('pixtral', 100_000, 10), 64 * 1 + 1);
});

test('mistral3: 14-pixel patches merged 2 × 2, the image held to 1,540 a side', () => {
  assert.equal(tokens('mistral3', 224, 224), 8 * 8 + 8);
  // 1,920 × 1,080 scaled to 1,540 × 866: 55 columns of 28 pixels, 31 rows.
  assert.equal(tokens('mistral3', 1920, 1080), 55 * 31 + 31);
  assert.equal(rule('mistral3').urlTokens, 55 * 55 + 55);
  assert.equal(tokens('mistral3:max_image_size=1024,patch_size=28', 1920, 1080), 37 * 21 + 21);
});

test('internvl: 448-pixel tiles on the closest grid of at most 12, and a thumbnail', () => {
  assert.equal(tokens('internvl', 224, 224), 256 + 2, 'one tile, no thumbnail');
  // 1,920 × 1,080 (16:9): 2 × 1 and 4 × 2 are as close; it has more than half of 4 × 2's pixels.
  assert.equal(tokens('internvl', 1920, 1080), (8 + 1) * 256 + 2);
  // 896 × 448 ties 2 × 1 with 4 × 2 too, but has under half of 4 × 2's pixels.
  assert.equal(tokens('internvl', 896, 448), (2 + 1) * 256 + 2);
  // A tall page: 1 × 3 is the closest of the grids to 1:3.2.
  assert.equal(tokens('internvl', 600, 1920), (3 + 1) * 256 + 2);
  assert.equal(tokens('internvl:use_thumbnail=0', 1920, 1080), 8 * 256 + 2);
  assert.equal(tokens('internvl:max_dynamic_patch=6', 1920, 1080), (2 + 1) * 256 + 2);
  const internvl = rule('internvl');
  assert.equal(internvl.urlTokens, 13 * 256 + 2);
  assert.equal(PROCESSORS.internvl.fewest(internvl.params), 258);
});

test('each rule takes its own parameters, goes through its flag and back, and refuses others by name', () => {
  for (const text of ['pixtral', 'mistral3:max_image_size=1024', 'internvl:use_thumbnail=0']) {
    assert.deepEqual(parseImageTokens(formatImageTokens(rule(text))), rule(text));
  }
  assert.equal(
    formatImageTokens(rule('internvl')),
    'internvl:min_dynamic_patch=1,max_dynamic_patch=12,use_thumbnail=1,url_tokens=3330',
  );
  for (const [bad, says] of [
    ['pixtral:min_pixels=4', /pixtral takes max_image_size, patch_size, url_tokens/],
    ['pixtral:patch_size=0', /max_image_size and patch_size ≥ 1/],
    ['internvl:min_dynamic_patch=13', /1 ≤ min_dynamic_patch ≤ max_dynamic_patch/],
    ['internvl:use_thumbnail=2', /use_thumbnail 0 or 1/],
    ['qwen2-vl:max_pixels=0', /min_pixels and max_pixels ≥ 1/],
    ['llava-next', /qwen2-vl, qwen3-vl, pixtral, mistral3, internvl/],
  ] as const) {
    assert.throws(
      () => parseImageTokens(bad),
      (e: unknown) => isConfigError(e) && e.got === bad && says.test(e.message),
      bad,
    );
  }
});

test('an image whose header is read is sized by its rule; by URL, planned as url_tokens', () => {
  const png = (width: number, height: number) => {
    const b = Buffer.alloc(24);
    b.writeUInt32BE(0x89504e47, 0);
    b.write('IHDR', 12, 'latin1');
    b.writeUInt32BE(width, 16);
    b.writeUInt32BE(height, 20);
    return `data:image/png;base64,${b.toString('base64')}`;
  };
  const shot = sizeImage(rule('internvl'), png(1920, 1080));
  assert.deepEqual(shot, { tokens: 9 * 256 + 2, least: 9 * 256 + 2, sized: true });
  assert.deepEqual(sizeImage(rule('pixtral:url_tokens=900'), 'https://x/y.png'), {
    tokens: 900,
    least: 2,
    sized: false,
  });
});
