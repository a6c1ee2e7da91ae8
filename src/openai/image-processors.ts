/**
 * What a vision model's processor makes of an image of a given size, in prompt tokens, as vLLM
 * counts them — each rule with its processor's defaults, which `--image-tokens RULE:key=N,…`
 * overrides as vLLM's `--mm-processor-kwargs` (or the model's config) would:
 *
 * - `qwen2-vl` (Qwen2-VL, Qwen2.5-VL; `min_pixels`, `max_pixels`) and `qwen3-vl` (Qwen3-VL,
 *   Qwen3.5): `smart_resize` to a multiple of the merged patch (28, 32 pixels) with the area in
 *   bounds, a token a square and `<|vision_start|>`, `<|vision_end|>` around them.
 * - `pixtral` (Pixtral-12B; `max_image_size` 1,024, `patch_size` 16) and `mistral3` (Mistral
 *   Small 3.1 and 3.2: 1,540, and 14-pixel patches merged 2 × 2, so 28): mistral_common's
 *   `ImageEncoder`. An image over `max_image_size` on a side is scaled down to it, aspect kept
 *   (Python's rounding, half to even); then a token per patch, a row's `[IMG_BREAK]` after each
 *   row and `[IMG_END]` for the last: columns × rows + rows.
 * - `internvl` (InternVL2, 2.5 and 3; `min_dynamic_patch` 1, `max_dynamic_patch` 12,
 *   `use_thumbnail` 1): the image cut into 448-pixel tiles by the grid of at most
 *   `max_dynamic_patch` tiles whose aspect is closest to the image's (on a tie, the larger grid
 *   where the image has over half its pixels), a thumbnail tile beside a grid of more than one,
 *   256 tokens a tile between `<img>` and `</img>`. Grids of one product that tie exactly on
 *   aspect are taken in (columns, rows) order.
 */
import type { PixelSize } from './image-size.ts';

/** The image rules that read an image's size. */
export const SIZE_RULES = ['qwen2-vl', 'qwen3-vl', 'pixtral', 'mistral3', 'internvl'] as const;
export type SizeRuleName = (typeof SIZE_RULES)[number];

/** A rule's parameters, by the names vLLM's processor kwargs give them. */
export type RuleParams = Readonly<Record<string, number>>;

export interface Processor {
  /** Its parameters with the processor's defaults. */
  readonly defaults: RuleParams;
  /** What its parameters must be, when they are not: the expectation, named. */
  invalid(p: RuleParams): string | undefined;
  /** Whether it sizes an image of this size (else the backend's answer: planned as unread). */
  sizes(size: PixelSize): boolean;
  tokens(size: PixelSize, p: RuleParams): number;
  /** The most tokens any image takes, and the fewest. */
  most(p: RuleParams): number;
  fewest(p: RuleParams): number;
}

/** `<|vision_start|>` and `<|vision_end|>` around a Qwen-VL image's tokens. */
const QWEN_MARKERS = 2;
/** Past an aspect of 200 to 1 the Qwen-VL processors refuse an image. */
const MAX_ASPECT = 200;

function qwen(factor: number, minPixels: number, maxPixels: number): Processor {
  return {
    defaults: { min_pixels: minPixels, max_pixels: maxPixels },
    invalid: (p) =>
      p.min_pixels < 1 || p.max_pixels < 1
        ? 'min_pixels and max_pixels ≥ 1'
        : p.min_pixels > p.max_pixels
          ? 'min_pixels ≤ max_pixels'
          : undefined,
    sizes: ({ width, height }) =>
      width > 0 && height > 0 && Math.max(width / height, height / width) <= MAX_ASPECT,
    tokens: ({ width, height }, p) => qwenTokens(height, width, p.min_pixels, p.max_pixels, factor),
    most: (p) => Math.max(1, Math.floor(p.max_pixels / factor ** 2)) + QWEN_MARKERS,
    fewest: (p) => Math.max(1, Math.ceil(p.min_pixels / factor ** 2)) + QWEN_MARKERS,
  };
}

/**
 * The Qwen-VL processors' `smart_resize`: each side rounded to a multiple of the square's side
 * `f` (28 for Qwen2-VL), then the area brought within [min, max] pixels, the aspect kept; one
 * token per f × f square, and the two markers around them.
 */
export function qwenTokens(
  height: number,
  width: number,
  minPixels: number,
  maxPixels: number,
  f = 28,
): number {
  let h = Math.max(f, Math.round(height / f) * f);
  let w = Math.max(f, Math.round(width / f) * f);
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.max(f, Math.floor(height / beta / f) * f);
    w = Math.max(f, Math.floor(width / beta / f) * f);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / f) * f;
    w = Math.ceil((width * beta) / f) * f;
  }
  return (h / f) * (w / f) + QWEN_MARKERS;
}

function pixtral(maxImageSize: number, patchSize: number): Processor {
  const grid = (width: number, height: number, p: RuleParams) => {
    let [w, h] = [width, height];
    const ratio = Math.max(h / p.max_image_size, w / p.max_image_size);
    if (ratio > 1) {
      w = Math.max(1, roundHalfEven(w / ratio));
      h = Math.max(1, roundHalfEven(h / ratio));
    }
    const cols = Math.floor((w - 1) / p.patch_size) + 1;
    const rows = Math.floor((h - 1) / p.patch_size) + 1;
    return cols * rows + rows;
  };
  return {
    defaults: { max_image_size: maxImageSize, patch_size: patchSize },
    invalid: (p) =>
      p.max_image_size < 1 || p.patch_size < 1 ? 'max_image_size and patch_size ≥ 1' : undefined,
    sizes: ({ width, height }) => width > 0 && height > 0,
    tokens: ({ width, height }, p) => grid(width, height, p),
    most: (p) => grid(p.max_image_size, p.max_image_size, p),
    fewest: (p) => grid(1, 1, p),
  };
}

/** Python's `round`: to the nearest integer, a half to the even one. */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** InternVL's tile side, and the tokens a tile makes (32 × 32 patches, pixel-shuffled 2 × 2). */
const TILE = 448;
const TILE_TOKENS = 256;
/** `<img>` and `</img>` around an InternVL image's tokens. */
const INTERNVL_MARKERS = 2;

/** The tiles an InternVL image takes, its thumbnail included. */
function internvlTiles({ width, height }: PixelSize, p: RuleParams): number {
  const aspect = width / height;
  let best = [1, 1];
  let bestDiff = Infinity;
  for (const [i, j] of grids(p.min_dynamic_patch, p.max_dynamic_patch)) {
    const diff = Math.abs(aspect - i / j);
    if (diff < bestDiff) {
      bestDiff = diff;
      best = [i, j];
    } else if (diff === bestDiff && width * height > 0.5 * TILE * TILE * i * j) {
      best = [i, j];
    }
  }
  const blocks = best[0] * best[1];
  return blocks + (p.use_thumbnail === 1 && blocks !== 1 ? 1 : 0);
}

/** The grids of `min`–`max` tiles, by their count, then columns, then rows. */
function grids(min: number, max: number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 1; i <= max; i++) {
    for (let j = 1; j <= max; j++) if (i * j >= min && i * j <= max) out.push([i, j]);
  }
  return out.sort((a, b) => a[0] * a[1] - b[0] * b[1] || a[0] - b[0] || a[1] - b[1]);
}

const internvl: Processor = {
  defaults: { min_dynamic_patch: 1, max_dynamic_patch: 12, use_thumbnail: 1 },
  invalid: (p) =>
    p.min_dynamic_patch < 1 || p.min_dynamic_patch > p.max_dynamic_patch
      ? '1 ≤ min_dynamic_patch ≤ max_dynamic_patch'
      : p.max_dynamic_patch > 64
        ? 'max_dynamic_patch ≤ 64'
        : p.use_thumbnail > 1
          ? 'use_thumbnail 0 or 1'
          : undefined,
  sizes: ({ width, height }) => width > 0 && height > 0,
  tokens: (size, p) => internvlTiles(size, p) * TILE_TOKENS + INTERNVL_MARKERS,
  most: (p) => {
    const most = p.max_dynamic_patch;
    return (most + (p.use_thumbnail === 1 && most !== 1 ? 1 : 0)) * TILE_TOKENS + INTERNVL_MARKERS;
  },
  fewest: (p) => {
    const least = p.min_dynamic_patch;
    return (
      (least + (p.use_thumbnail === 1 && least !== 1 ? 1 : 0)) * TILE_TOKENS + INTERNVL_MARKERS
    );
  },
};

export const PROCESSORS: Readonly<Record<SizeRuleName, Processor>> = {
  'qwen2-vl': qwen(28, 56 * 56, 16_384 * 28 * 28),
  'qwen3-vl': qwen(32, 65_536, 16_777_216),
  pixtral: pixtral(1024, 16),
  mistral3: pixtral(1540, 28),
  internvl,
};
