/**
 * HTTP-date (RFC 9110 §5.6.7): the three formats and nothing else.
 *
 *   IMF-fixdate  = day-name "," SP day SP month SP year SP hour ":" minute ":" second SP "GMT"
 *                  e.g. `Sun, 06 Nov 1994 08:49:37 GMT`
 *   rfc850-date  = day-name-l "," SP day "-" month "-" 2DIGIT SP time-of-day SP "GMT"
 *                  e.g. `Sunday, 06-Nov-94 08:49:37 GMT`
 *   asctime-date = day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP year
 *                  e.g. `Sun Nov  6 08:49:37 1994`
 *
 * Exact spacing, two-digit day/hour/minute/second, four-digit year (two in rfc850-date), only
 * `GMT`; no leading or trailing whitespace, no numeric zones, no other layouts (`Date.parse`
 * accepts all of those, and "0", and ISO 8601). The names are matched case-insensitively, as RFC
 * 9111 §4.2 asks of cache recipients. A calendar date that does not exist (`31 Feb`) is invalid;
 * the day name is not checked against the date (the grammar does not tie them). A two-digit year
 * that would be more than 50 years in the future is the most recent past year with those digits
 * (RFC 9110 §5.6.7), judged against `now`.
 */

const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const DAYS_LONG = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

const IMF = /^([A-Za-z]{3}), (\d{2}) ([A-Za-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) ([Gg][Mm][Tt])$/;
const RFC850 =
  /^([A-Za-z]{6,9}), (\d{2})-([A-Za-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) ([Gg][Mm][Tt])$/;
const ASCTIME = /^([A-Za-z]{3}) ([A-Za-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

function month(name: string): number {
  return MONTHS.indexOf(name.toLowerCase());
}

function daysIn(year: number, m: number): number {
  return new Date(Date.UTC(year, m + 1, 0)).getUTCDate();
}

function build(
  year: number,
  m: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number | undefined {
  if (m < 0 || day < 1 || day > daysIn(year, m)) return undefined;
  // second = 2DIGIT: 60 is a leap second (RFC 5322 §3.3), folded into the next minute.
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const d = new Date(0);
  d.setUTCFullYear(year, m, day);
  d.setUTCHours(hour, minute, second, 0);
  return d.getTime();
}

/** Milliseconds since the epoch of an HTTP-date, or undefined when `value` is not one. */
export function parseHttpDate(
  value: string | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value === undefined || value.length < 24 || value.length > 37) return undefined;
  let m = IMF.exec(value);
  if (m) {
    if (!DAYS.includes(m[1]!.toLowerCase())) return undefined;
    return build(
      Number(m[4]),
      month(m[3]!),
      Number(m[2]),
      Number(m[5]),
      Number(m[6]),
      Number(m[7]),
    );
  }
  m = RFC850.exec(value);
  if (m) {
    if (!DAYS_LONG.includes(m[1]!.toLowerCase())) return undefined;
    const yy = Number(m[4]);
    const thisYear = new Date(now).getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + 100 + yy;
    while (year > thisYear + 50) year -= 100;
    return build(year, month(m[3]!), Number(m[2]), Number(m[5]), Number(m[6]), Number(m[7]));
  }
  m = ASCTIME.exec(value);
  if (m) {
    if (!DAYS.includes(m[1]!.toLowerCase())) return undefined;
    const day = m[3]!;
    // ( 2DIGIT / ( SP DIGIT ) ): " 6" or "06" or "16", never "6 " or "  ".
    if (!/^(\d\d| \d)$/.test(day)) return undefined;
    return build(
      Number(m[7]),
      month(m[2]!),
      Number(day.trim()),
      Number(m[4]),
      Number(m[5]),
      Number(m[6]),
    );
  }
  return undefined;
}

/** IMF-fixdate, the format HTTP senders must generate (RFC 9110 §5.6.7). */
export function formatHttpDate(ms: number): string {
  return new Date(ms).toUTCString();
}
