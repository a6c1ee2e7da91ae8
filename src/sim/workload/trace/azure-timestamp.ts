/**
 * Azure trace timestamps, `2023-11-16 18:15:46.6805900`: a calendar time with up to nine
 * fractional digits and no zone. Parsed by hand into whole seconds since 1970 plus nanoseconds,
 * because Date would read a zoneless string as local time and keep only milliseconds, and
 * seconds·1e7 + ticks would exceed the integers a double holds exactly.
 */
export interface CalendarInstant {
  /** Whole seconds since 1970-01-01 00:00:00 on the trace's clock. */
  readonly seconds: number;
  readonly nanos: number;
}

const PATTERN = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/;

/** The instant `text` names, or undefined when it is not a valid timestamp. */
export function parseAzureTimestamp(text: string): CalendarInstant | undefined {
  const m = PATTERN.exec(text.trim());
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const nanos = m[7] ? Number(m[7].padEnd(9, '0')) : 0;
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second;
  return { seconds, nanos };
}

/** Milliseconds from `a` to `b`, exact to the nanosecond digits a double can carry. */
export function msBetween(a: CalendarInstant, b: CalendarInstant): number {
  return (b.seconds - a.seconds) * 1000 + (b.nanos - a.nanos) / 1e6;
}

/** Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
