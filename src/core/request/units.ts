/**
 * Units used across Goodput. Time is milliseconds from the clock's origin, token counts are
 * integers, KV memory is bytes. Plain aliases keep arithmetic natural; the names carry the unit.
 */
export type Ms = number;
export type Tokens = number;
export type Bytes = number;

/**
 * The most tokens one request's prompt or output may have anywhere a workload is read (a trace,
 * a length spec): 2^24, past the longest context any model serves (Llama 4 Scout's 10M), and
 * far inside the 32-bit columns a trace is held in.
 */
export const MAX_REQUEST_TOKENS: Tokens = 16_777_216;
