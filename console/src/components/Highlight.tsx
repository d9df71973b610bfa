// Flagged spans shown as marks. Offsets are Unicode code points (the API's
// unit); the text is split into code points before slicing, so an emoji or
// an accented letter before a match does not shift it.
import type { FlaggedSpan } from "../api";
import { codePoints } from "../format";

interface Segment {
  start: number;
  end: number;
}

// merge sorts spans and joins the overlapping ones: a part of the text is
// marked once however many rules matched it.
export function mergeSpans(spans: readonly FlaggedSpan[]): Segment[] {
  const sorted = spans
    .filter((s) => s.end > s.start && s.start >= 0)
    .map((s) => ({ start: s.start, end: s.end }))
    .sort((a, b) => a.start - b.start || a.end - b.end);
  const out: Segment[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s.start <= last.end) last.end = Math.max(last.end, s.end);
    else out.push({ ...s });
  }
  return out;
}

// HighlightedText is the whole text with its spans marked.
export function HighlightedText({ text, spans }: { text: string; spans: readonly FlaggedSpan[] }) {
  const cps = codePoints(text);
  const parts = [];
  let at = 0;
  for (const seg of mergeSpans(spans)) {
    const start = Math.min(seg.start, cps.length);
    const end = Math.min(seg.end, cps.length);
    if (start > at) parts.push(cps.slice(at, start).join(""));
    if (end > start) {
      parts.push(
        <mark key={start} data-start={start} data-end={end} title={`characters ${start}–${end}`}>
          {cps.slice(start, end).join("")}
        </mark>,
      );
    }
    at = Math.max(at, end);
  }
  if (at < cps.length) parts.push(cps.slice(at).join(""));
  return <p class="flagged-text">{parts}</p>;
}

// SpanExcerpts shows the matched parts alone, in text order, for content
// whose text the server did not keep: "… <mark>match</mark> … <mark>other</mark> …".
// Each span carries its own text, so nothing is invented between them;
// overlapping spans are joined from their own texts. The spans must be of
// one evaluated text (one item, or one transcript chunk).
export function SpanExcerpts({ spans }: { spans: readonly FlaggedSpan[] }) {
  const groups: { start: number; end: number; cps: string[] }[] = [];
  for (const s of [...spans].sort((a, b) => a.start - b.start || a.end - b.end)) {
    const cps = codePoints(s.text);
    const last = groups[groups.length - 1];
    if (last && s.start <= last.end) {
      if (s.end > last.end) {
        last.cps.push(...cps.slice(last.end - s.start));
        last.end = s.end;
      }
    } else {
      groups.push({ start: s.start, end: s.end, cps });
    }
  }
  if (groups.length === 0) return null;
  const parts = [];
  let prevEnd = 0;
  for (const g of groups) {
    if (g.start > prevEnd) parts.push(<span class="gap" key={`g${g.start}`}>…</span>);
    parts.push(
      <mark key={g.start} data-start={g.start} data-end={g.end} title={`characters ${g.start}–${g.end}`}>
        {g.cps.join("")}
      </mark>,
    );
    prevEnd = g.end;
  }
  parts.push(<span class="gap" key="end">…</span>);
  return <p class="flagged-text excerpts">{parts}</p>;
}
