/** Calendar dates as the job writes them, `YYYY-MM-DD` in UTC: parsed, shown and moved by whole days. */

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 86_400_000;

/** True when `text` is a real calendar date written as `YYYY-MM-DD`. */
export function isIsoDate(text: string): boolean {
  const m = DATE_RE.exec(text);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().slice(0, 10) === text;
}

/** The UTC calendar date of an instant, as `YYYY-MM-DD`. */
export function utcDate(instant: Date): string {
  return instant.toISOString().slice(0, 10);
}

/** Whole days from `from` to `to` (both `YYYY-MM-DD`): DaysLeft when `from` is AsOfDate. */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);
}

/** `date` moved by `days` (may be negative), as `YYYY-MM-DD`. */
export function addDays(date: string, days: number): string {
  return utcDate(new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS));
}
