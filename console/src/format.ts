// Formatting shared by the pages. Everything here returns strings that the
// pages render as text (never as markup).

// shortId keeps the end of an id: our ids are UUIDv7, whose first digits
// are a timestamp shared by everything made in the same minute.
export function shortId(id: string): string {
  return id.length > 12 ? `…${id.slice(-8)}` : id;
}

// formatTime shows an RFC 3339 time as UTC, to the second, the same for
// every viewer and in the tests.
export function formatTime(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

// enumName drops the enumeration's prefix: JOB_STATUS_COMPLETED -> COMPLETED.
export function enumName(v: string | undefined, prefix: string): string {
  if (!v) return "";
  return v.startsWith(prefix) ? v.slice(prefix.length) : v;
}

export function outcomeName(v: string | undefined): string {
  return enumName(v, "OUTCOME_");
}

export function formatScore(s: number | undefined): string {
  if (s === undefined) return "";
  if (s < 0) return "failed";
  return s.toFixed(2);
}

// ms parses an Int64String (milliseconds on the media timeline).
export function ms(v: string | undefined): number | undefined {
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

export function timecode(milliseconds: number): string {
  const t = Math.max(0, Math.round(milliseconds));
  const h = Math.floor(t / 3_600_000);
  const m = Math.floor((t % 3_600_000) / 60_000);
  const s = Math.floor((t % 60_000) / 1000);
  const f = t % 1000;
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(h)}:${two(m)}:${two(s)}.${String(f).padStart(3, "0")}`;
}

// codePoints splits a string the way the API counts offsets: by Unicode
// code point, not by UTF-16 unit.
export function codePoints(s: string): string[] {
  return Array.from(s);
}

// utf16Offset converts a code point offset of s into a UTF-16 offset (for
// textarea selections).
export function utf16Offset(s: string, codePoint: number): number {
  let n = 0;
  let i = 0;
  for (const ch of s) {
    if (n === codePoint) return i;
    n++;
    i += ch.length;
  }
  return i;
}

// safeHref allows only http(s) URLs of this origin or absolute http(s)
// URLs; any other scheme (script or data URLs) becomes undefined, so a link
// from the API can never run script.
export function safeHref(u: string | undefined): string | undefined {
  if (!u) return undefined;
  try {
    const url = new URL(u, location.origin);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}
