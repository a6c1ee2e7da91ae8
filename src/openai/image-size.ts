/**
 * The prompt tokens an image takes in the served model, as its processor makes them, without
 * the processor: `--image-tokens`.
 *
 * - A fixed figure, for models that make every image the same size: LLaVA-1.5 576 (a 336-pixel
 *   image in 14-pixel patches), Gemma 3 256.
 * - `qwen2-vl` (Qwen2-VL, Qwen2.5-VL): a dynamic resolution. The processor resizes an image so
 *   each side is a multiple of 28 pixels (14-pixel patches merged 2 × 2) and its area lies
 *   within `min_pixels` and `max_pixels` (3,136 and 12,845,056 by default; vLLM's
 *   `--mm-processor-kwargs` may set others), aspect kept; each 28 × 28 square is one token,
 *   between `<|vision_start|>` and `<|vision_end|>`. A 1,920 × 1,080 screenshot is 2,693
 *   tokens, a 224 × 224 thumbnail 66.
 * - `qwen3-vl` (Qwen3-VL, Qwen3.5): the same resize in 32-pixel squares (16-pixel patches merged
 *   2 × 2), its area within 65,536 and 16,777,216 pixels by default (its
 *   `preprocessor_config.json`: `size.shortest_edge`, `size.longest_edge`). The screenshot is
 *   2,042 tokens, the thumbnail 66.
 * - `pixtral` (Pixtral-12B), `mistral3` (Mistral Small 3.1, 3.2) and `internvl` (InternVL2,
 *   2.5, 3): their processors' rules, in image-processors.ts with the others'. The screenshot
 *   is 2,340, 1,736 and 2,306 tokens; the thumbnail 210, 72 and 258.
 * - Under any rule, the size is read from an inline image's header (PNG, JPEG, GIF, WebP). An
 *   image by URL is fetched by the backend, never by the gateway, so its size is unknown: it is
 *   planned as `url_tokens` (default: the most any image can take), which a gateway then learns
 *   from its backends' counts (gateway/url-image-tokens.ts).
 */
import { ConfigError } from '../core/errors.ts';
import { PROCESSORS, SIZE_RULES, type RuleParams, type SizeRuleName } from './image-processors.ts';

export type { SizeRuleName } from './image-processors.ts';

export type ImageTokens =
  | { readonly rule: 'fixed'; readonly tokens: number }
  | {
      readonly rule: SizeRuleName;
      /** The processor's parameters (image-processors.ts), its defaults where not given. */
      readonly params: RuleParams;
      /** An image whose size the gateway cannot read (by URL, or a format it does not know). */
      readonly urlTokens: number;
    };

/** An image rule that reads the image's size. */
export type SizeRule = Extract<ImageTokens, { rule: SizeRuleName }>;

const isSizeRule = (rule: string): rule is SizeRuleName =>
  (SIZE_RULES as readonly string[]).includes(rule);

/** `--image-tokens N`, or a size rule with its parameters (`qwen2-vl:max_pixels=…,url_tokens=…`). */
export function parseImageTokens(text: string, flag = '--image-tokens'): ImageTokens {
  const expected = `an integer ≥ 1, or ${SIZE_RULES.join(', ')}[:param=N,…,url_tokens=N]`;
  if (/^\d+$/.test(text) && Number(text) >= 1 && Number.isSafeInteger(Number(text))) {
    return { rule: 'fixed', tokens: Number(text) };
  }
  const [rule, given = ''] = text.split(/:(.*)/s, 2);
  if (!isSizeRule(rule)) throw new ConfigError(flag, expected, text);
  const processor = PROCESSORS[rule];
  const params: Record<string, number> = { ...processor.defaults };
  let urlTokens: number | undefined;
  for (const pair of given === '' ? [] : given.split(',')) {
    const [key, value] = pair.split('=', 2);
    const n = Number(value);
    const known = key === 'url_tokens' || Object.hasOwn(processor.defaults, key);
    if (!known || !(Number.isSafeInteger(n) && n >= (key === 'url_tokens' ? 1 : 0))) {
      const keys = [...Object.keys(processor.defaults), 'url_tokens'].join(', ');
      throw new ConfigError(flag, `${expected}; ${rule} takes ${keys}`, text);
    }
    if (key === 'url_tokens') urlTokens = n;
    else params[key] = n;
  }
  const invalid = processor.invalid(params);
  if (invalid !== undefined) throw new ConfigError(flag, invalid, text);
  return { rule, params, urlTokens: urlTokens ?? processor.most(params) };
}

/** The most tokens the rule makes of any image. */
export function mostImageTokens(spec: SizeRule): number {
  return PROCESSORS[spec.rule].most(spec.params);
}

/** The flag's value that gives `spec` (what the local engine pool passes on). */
export function formatImageTokens(spec: ImageTokens): string {
  if (spec.rule === 'fixed') return String(spec.tokens);
  const params = Object.entries(spec.params).map(([k, v]) => `${k}=${v}`);
  return `${spec.rule}:${[...params, `url_tokens=${spec.urlTokens}`].join(',')}`;
}

/**
 * The tokens the image at `url` takes in the served model, and the fewest it can take: the same
 * where the rule reads its size; where it cannot (a URL, a size its processor refuses), the
 * fewest any image takes; 0 for a figure, which is the operator's planning number, not a bound a
 * prompt is refused by.
 */
export function sizeImage(spec: ImageTokens, url: string): ImageCost {
  if (spec.rule === 'fixed') return { tokens: spec.tokens, least: 0, sized: false };
  const processor = PROCESSORS[spec.rule];
  const size = inlineImageSize(url);
  if (size === undefined || !processor.sizes(size)) {
    const fewest = processor.fewest(spec.params);
    return { tokens: spec.urlTokens, least: Math.min(fewest, spec.urlTokens), sized: false };
  }
  const tokens = processor.tokens(size, spec.params);
  return { tokens, least: tokens, sized: true };
}

export interface ImageCost {
  /** What admission plans it as. */
  readonly tokens: number;
  /** What it is sure to be: a prompt past the context by these alone is refused. */
  readonly least: number;
  /** Sized by the rule from the image itself (its header read). */
  readonly sized: boolean;
}

export interface PixelSize {
  readonly width: number;
  readonly height: number;
}

/** The first base64 characters decoded for a header: 48 KiB of image, past most JPEGs' EXIF. */
const HEAD_CHARS = 64 * 1024;

/** An inline image's size, read from its header; undefined for a URL or a format not read. */
export function inlineImageSize(url: string): PixelSize | undefined {
  if (!url.startsWith('data:')) return undefined;
  const comma = url.indexOf(',');
  if (comma < 0) return undefined;
  const head = Buffer.from(url.slice(comma + 1, comma + 1 + HEAD_CHARS), 'base64');
  const size = imageSize(head);
  // A JPEG's frame header may lie past a large EXIF or ICC segment: read it all.
  if (size !== undefined || url.length - comma - 1 <= HEAD_CHARS || !isJpeg(head)) return size;
  return imageSize(Buffer.from(url.slice(comma + 1), 'base64'));
}

/** The size a PNG, GIF, WebP or JPEG header gives; undefined for anything else, or cut short. */
export function imageSize(b: Buffer): PixelSize | undefined {
  if (
    b.length >= 24 &&
    b.readUInt32BE(0) === 0x89504e47 &&
    b.toString('latin1', 12, 16) === 'IHDR'
  ) {
    return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  }
  if (b.length >= 10 && b.toString('latin1', 0, 3) === 'GIF') {
    return { width: b.readUInt16LE(6), height: b.readUInt16LE(8) };
  }
  if (
    b.length >= 30 &&
    b.toString('latin1', 0, 4) === 'RIFF' &&
    b.toString('latin1', 8, 12) === 'WEBP'
  ) {
    return webpSize(b);
  }
  return isJpeg(b) ? jpegSize(b) : undefined;
}

function webpSize(b: Buffer): PixelSize | undefined {
  switch (b.toString('latin1', 12, 16)) {
    case 'VP8 ':
      return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
    case 'VP8L': {
      const bits = b.readUInt32LE(21);
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    case 'VP8X':
      return { width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
    default:
      return undefined;
  }
}

const isJpeg = (b: Buffer) => b.length >= 4 && b[0] === 0xff && b[1] === 0xd8;

/** A JPEG's size, from its first frame header (SOF0–SOF15, less DHT, JPG and DAC). */
function jpegSize(b: Buffer): PixelSize | undefined {
  let at = 2;
  while (at + 9 <= b.length) {
    if (b[at] !== 0xff) return undefined;
    const marker = b[at + 1];
    if (marker === 0xff) {
      at++; // fill byte
      continue;
    }
    // Markers without a length: TEM, RST0–7, SOI, EOI.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd9)) {
      at += 2;
      continue;
    }
    const frame =
      marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (frame) return { height: b.readUInt16BE(at + 5), width: b.readUInt16BE(at + 7) };
    at += 2 + b.readUInt16BE(at + 2);
  }
  return undefined;
}
