/**
 * Images in a prompt: chat's `{"type": "image_url", "image_url": {"url": …, "detail": …}}` and
 * the Responses API's `{"type": "input_image", "image_url": …}`, on a user's message, as OpenAI
 * takes them. The URL is one the backend fetches (http, https) or the image itself (a
 * `data:image/…;base64,` URL); it goes upstream as it came, and vLLM's processor makes it the
 * model's image tokens.
 *
 * Without the model's processor an image is sized by the served model's `--image-tokens`
 * (image-size.ts): a figure for every image (576 for LLaVA-1.5, 256 for Gemma 3), or Qwen2-VL's
 * rule of the image's size. A server not told it refuses an image by name (`imagesSizable`):
 * admission would otherwise plan its prefill as nothing. For prefix caching an image reads as text of its size made of its
 * URL's digest, so a conversation that sends the same image again shares the blocks it filled
 * (vLLM's block hashes take in the image's own hash the same way).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { invalidRequest } from './errors.ts';
import { fieldPath } from './field-path.ts';
import { CHARS_PER_TOKEN } from './prompt-tokens.ts';
import { sizeImage, type ImageCost, type ImageTokens } from './image-size.ts';
import { neutralOnly } from './unsupported-fields.ts';
import { expect, isObject, text } from './validation.ts';

export const IMAGE_DETAILS = ['auto', 'low', 'high'] as const;
type Detail = (typeof IMAGE_DETAILS)[number];

/** An image on a chat message. */
export interface ImagePart {
  readonly type: 'image_url';
  readonly image_url: { readonly url: string; readonly detail?: Detail | null };
}

/** The forms a URL of an image takes: fetched by the backend, or the image's bytes inline. */
const IMAGE_URL = /^(?:https?:\/\/\S|data:image\/[a-z0-9.+-]+;base64,)/i;
const URL_FORMS = 'an http(s) URL or a data:image/…;base64, URL';
const imageUrl = text(URL_FORMS).refine((s) => IMAGE_URL.test(s), { error: URL_FORMS });
const detail = z.enum(IMAGE_DETAILS, expect(IMAGE_DETAILS.join(', '))).nullish();
const isDetail = (v: unknown): boolean =>
  v == null || (IMAGE_DETAILS as readonly unknown[]).includes(v);
const isImageUrl = (v: unknown): boolean =>
  typeof v === 'string' && IMAGE_URL.test(v) && v.isWellFormed();

/**
 * The most images a request may carry, as OpenAI's API allows: each is hashed for routing, so
 * a body of tiny images would otherwise cost the gateway its size in digests.
 */
export const MAX_IMAGES = 500;

export const imagePart = z.strictObject({
  type: z.literal('image_url'),
  image_url: z.strictObject({ url: imageUrl, detail }, expect('an object ({"url": "…"})')),
});

/** Chat's image, judged by a plain test of its fields: `imagePart` without zod's cost. */
export function isImagePart(v: unknown): boolean {
  if (!isObject(v) || v.type !== 'image_url' || Object.keys(v).length !== 2) return false;
  const i = v.image_url;
  if (!isObject(i) || !isImageUrl(i.url) || !isDetail(i.detail)) return false;
  const keys = Object.keys(i).length;
  return keys === 1 || (keys === 2 && 'detail' in i);
}

/** The Responses API's image; one stored as a file (`file_id`) is not, no files being kept. */
export const inputImagePart = z.strictObject({
  type: z.literal('input_image'),
  image_url: imageUrl,
  detail,
  file_id: neutralOnly([]),
});

/** The Responses API's image, judged by a plain test: `inputImagePart` without zod's cost. */
export function isInputImagePart(v: unknown): boolean {
  if (!isObject(v) || v.type !== 'input_image' || !isImageUrl(v.image_url)) return false;
  if (!isDetail(v.detail) || v.file_id != null) return false;
  return Object.keys(v).every(
    (k) => k === 'type' || k === 'image_url' || k === 'detail' || k === 'file_id',
  );
}

/** An image in chat's form or the Responses API's: the URL it names, or undefined if none. */
export function imageUrlOf(part: unknown): string | undefined {
  if (!isObject(part)) return undefined;
  if (part.type === 'image_url' && isObject(part.image_url)) return part.image_url.url as string;
  if (part.type === 'input_image') return part.image_url as string;
  return undefined;
}

/** Where a message's content holds its first image; -1: none. */
export function firstImage(content: unknown): number {
  return Array.isArray(content) ? content.findIndex((p) => imageUrlOf(p) !== undefined) : -1;
}

/** The tokens the images in a message's content take in the served model. */
export function imagesTokens(content: unknown, spec: ImageTokens): number {
  return sumImages(content, spec, (c) => c.tokens);
}

/** The fewest tokens the images in a message's content can take (`sizeImage`'s bound). */
export function leastImagesTokens(content: unknown, spec: ImageTokens): number {
  return sumImages(content, spec, (c) => c.least);
}

function sumImages(content: unknown, spec: ImageTokens, of: (c: ImageCost) => number): number {
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) {
    if (imageUrlOf(part) !== undefined) n += of(imagePartCost(part as ImagePart, spec));
  }
  return n;
}

/** The tokens an image takes in the served model (none known: 0), once per part and rule. */
export function imagePartTokens(part: ImagePart, spec: ImageTokens | undefined): number {
  return spec === undefined ? 0 : imagePartCost(part, spec).tokens;
}

/** What an image takes and is sure to take (`sizeImage`), once per part and rule. */
export function imagePartCost(part: ImagePart, spec: ImageTokens): ImageCost {
  if (spec.rule === 'fixed') return sizeImage(spec, part.image_url.url);
  const known = TOKENS.get(part);
  if (known?.spec === spec) return known.cost;
  const cost = sizeImage(spec, part.image_url.url);
  TOKENS.set(part, { spec, cost });
  return cost;
}
const TOKENS = new WeakMap<ImagePart, { spec: ImageTokens; cost: ImageCost }>();

/** Where each image in `messages` is: its message's index, and its part's in that content. */
function* imagesOf(messages: unknown): Generator<readonly [number, number]> {
  if (!Array.isArray(messages)) return;
  for (let i = 0; i < messages.length; i++) {
    const m: unknown = messages[i];
    const content = isObject(m) ? m.content : undefined;
    if (!Array.isArray(content)) continue;
    for (let j = 0; j < content.length; j++) if (imageUrlOf(content[j]) !== undefined) yield [i, j];
  }
}

/**
 * The image past `MAX_IMAGES` in `messages` (at `path`), as a refusal's issue; none when there
 * are no more than that.
 */
export function tooManyImages(messages: unknown, path: string): z.core.$ZodRawIssue | undefined {
  let seen = 0;
  for (const [i, j] of imagesOf(messages)) {
    if (++seen <= MAX_IMAGES) continue;
    return {
      code: 'custom',
      path: [path, i, 'content', j],
      input: undefined,
      message: `at most ${MAX_IMAGES} images in a request, as OpenAI takes them`,
      params: { plain: true, got: null },
    };
  }
  return undefined;
}

/** The images in `messages` whose size the rule could not read (by URL), and their plan. */
export function unsizedImages(
  messages: unknown,
  spec: ImageTokens,
): { readonly count: number; readonly tokens: number } {
  let count = 0;
  let tokens = 0;
  for (const [i, j] of imagesOf(messages)) {
    const part = (messages as { content: unknown[] }[])[i].content[j] as ImagePart;
    const cost = imagePartCost(part, spec);
    if (cost.sized) continue;
    count++;
    tokens += cost.tokens;
  }
  return { count, tokens };
}

/** Whether messages (a chat's, or a Responses conversation's items) hold an image. */
export function holdsImages(messages: unknown): boolean {
  return !imagesOf(messages).next().done;
}

/**
 * An image as the prompt's text for prefix caching: `tokens` tokens' worth of characters made
 * of its URL's digest, so the same image reads the same and a different one does not.
 */
export function imageText(part: ImagePart, tokens: number): string {
  let digest = DIGESTS.get(part);
  if (digest === undefined) {
    digest = createHash('sha256').update(part.image_url.url).digest('hex');
    DIGESTS.set(part, digest);
  }
  const chars = tokens * CHARS_PER_TOKEN;
  return digest.repeat(Math.ceil(chars / digest.length)).slice(0, chars);
}
const DIGESTS = new WeakMap<ImagePart, string>();

/**
 * Refuses `messages` (at `path`: `messages`, or a Responses request's `input`) when one holds an
 * image and `imageTokens` is not known, naming the first; `server` says who was not told.
 */
export function imagesSizable(
  messages: unknown,
  imageTokens: ImageTokens | undefined,
  path: string,
  server: string,
): void {
  if (imageTokens !== undefined) return;
  for (const [i, j] of imagesOf(messages)) {
    const at = fieldPath([path, i, 'content', j]);
    throw invalidRequest(
      `${at}: an image, which ${server} cannot size: it was not started with --image-tokens (the prompt tokens an image takes in the served model)`,
      at,
      'invalid_value',
    );
  }
}
