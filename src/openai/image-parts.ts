/**
 * Images in a prompt: chat's `{"type": "image_url", "image_url": {"url": …, "detail": …}}` and
 * the Responses API's `{"type": "input_image", "image_url": …}`, on a user's message, as OpenAI
 * takes them. The URL is one the backend fetches (http, https) or the image itself (a
 * `data:image/…;base64,` URL); it goes upstream as it came, and vLLM's processor makes it the
 * model's image tokens.
 *
 * Without the model's processor an image is sized as the served model's `--image-tokens`: the
 * prompt tokens one image takes (576 for LLaVA-1.5's 336-pixel image, 256 for Gemma 3's). A
 * server not told it refuses an image by name (`imagesSizable`): admission would otherwise plan
 * its prefill as nothing. For prefix caching an image reads as text of its size made of its
 * URL's digest, so a conversation that sends the same image again shares the blocks it filled
 * (vLLM's block hashes take in the image's own hash the same way).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { invalidRequest } from './errors.ts';
import { fieldPath } from './field-path.ts';
import { CHARS_PER_TOKEN } from './prompt-tokens.ts';
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

export const imagePart = z.strictObject({
  type: z.literal('image_url'),
  image_url: z.strictObject({ url: imageUrl, detail }, expect('an object ({"url": "…"})')),
});

/** The Responses API's image; one stored as a file (`file_id`) is not, no files being kept. */
export const inputImagePart = z.strictObject({
  type: z.literal('input_image'),
  image_url: imageUrl,
  detail,
  file_id: neutralOnly([]),
});

/** An image in chat's form or the Responses API's: the URL it names, or undefined if none. */
export function imageUrlOf(part: unknown): string | undefined {
  if (!isObject(part)) return undefined;
  if (part.type === 'image_url' && isObject(part.image_url)) return part.image_url.url as string;
  if (part.type === 'input_image') return part.image_url as string;
  return undefined;
}

/** The images in a message's content. */
export function imagesIn(content: unknown): number {
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const part of content) if (imageUrlOf(part) !== undefined) n++;
  return n;
}

/** Whether a chat request's messages hold an image. */
export function holdsImages(body: { readonly messages?: unknown }): boolean {
  const messages = body.messages;
  if (!Array.isArray(messages)) return false;
  for (const m of messages) if (isObject(m) && imagesIn(m.content) > 0) return true;
  return false;
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
  imageTokens: number | undefined,
  path: string,
  server: string,
): void {
  if (imageTokens !== undefined || !Array.isArray(messages)) return;
  for (let i = 0; i < messages.length; i++) {
    const content: unknown = isObject(messages[i]) ? messages[i].content : undefined;
    if (!Array.isArray(content)) continue;
    const j = content.findIndex((part) => imageUrlOf(part) !== undefined);
    if (j < 0) continue;
    const at = fieldPath([path, i, 'content', j]);
    throw invalidRequest(
      `${at}: an image, which ${server} cannot size: it was not started with --image-tokens (the prompt tokens one image takes in the served model)`,
      at,
      'invalid_value',
    );
  }
}
