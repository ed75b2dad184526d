// The maintenance window of update.window ("03:00-05:00", "Sat,Sun 02:00-06:00",
// "Mon-Fri 22:00-02:00"), in the gateway's local time. The days name the day a window starts;
// a window whose end is before its start ends the next day.
import { WINDOW_PATTERN } from "../config/update-config.js";

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

export interface MaintenanceWindow {
  /** Indexed by Date.getDay(): the days a window starts on. */
  readonly days: readonly boolean[];
  /** Minutes after midnight. */
  readonly start: number;
  readonly end: number;
}

export function parseWindow(text: string): MaintenanceWindow {
  if (!WINDOW_PATTERN.test(text)) throw new Error(`update.window: expected a window such as 03:00-05:00 or Sat,Sun 02:00-06:00, got "${text}"`);
  const [dayPart, timePart] = text.includes(" ") ? [text.slice(0, text.lastIndexOf(" ")).trim(), text.slice(text.lastIndexOf(" ") + 1)] : ["", text];
  const days = new Array<boolean>(7).fill(dayPart === "");
  for (const item of dayPart ? dayPart.split(",") : []) {
    const [a, b] = item.split("-");
    const from = DAYS.indexOf(a);
    const to = DAYS.indexOf(b ?? a);
    for (let d = from; ; d = (d + 1) % 7) {
      days[d] = true;
      if (d === to) break;
    }
  }
  const [s, e] = timePart.split("-").map((t) => Number(t.slice(0, 2)) * 60 + Number(t.slice(3, 5)));
  return { days, start: s, end: e };
}

const minutesOf = (d: Date): number => d.getHours() * 60 + d.getMinutes();
const length = (w: MaintenanceWindow): number => (w.end > w.start ? w.end - w.start : w.end + 1440 - w.start);

/** True when `now` lies in a window (one that started today, or yesterday and runs past midnight). */
export function inWindow(w: MaintenanceWindow, now: Date): boolean {
  const m = minutesOf(now);
  const today = now.getDay();
  const yesterday = (today + 6) % 7;
  if (w.days[today] && m >= w.start && m < w.start + length(w)) return true;
  return w.days[yesterday] && m + 1440 < w.start + length(w);
}

/** The next start of a window after `now` (local time). */
export function nextWindowStart(w: MaintenanceWindow, now: Date): Date {
  for (let i = 0; i <= 7; i++) {
    const d = new Date(now.getFullYear(), now.getMonth(), now.getDate() + i, Math.floor(w.start / 60), w.start % 60, 0, 0);
    if (w.days[d.getDay()] && d.getTime() > now.getTime()) return d;
  }
  throw new Error("update.window: no day in the window");
}
