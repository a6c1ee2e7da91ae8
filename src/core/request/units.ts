/**
 * Units used across Goodput. Time is milliseconds from the clock's origin, token counts are
 * integers, KV memory is bytes. Plain aliases keep arithmetic natural; the names carry the unit.
 */
export type Ms = number;
export type Tokens = number;
export type Bytes = number;
