// The hits of video and audio on the media's timeline: one marker per hit
// at [startMs, endMs), above it the frame segment and the transcript chunk
// the hit came from. Drawn in SVG with percentage coordinates (attributes,
// not inline styles, which the Content-Security-Policy forbids).
import type { LabelHit } from "../api";
import { ms, timecode } from "../format";

export interface TimedHit {
  index: number; // position in the job's hit list
  hit: LabelHit;
}

function endOf(h: LabelHit): number {
  const start = ms(h.startMs) ?? 0;
  return Math.max(start, ms(h.endMs) ?? start, ms(h.frameEndMs) ?? 0, ms(h.transcriptEndMs) ?? 0);
}

// span of the timeline: the last end among the hits, rounded up to a tick.
export function timelineEnd(hits: readonly LabelHit[]): number {
  let end = 0;
  for (const h of hits) end = Math.max(end, endOf(h));
  const step = tickStep(end);
  return Math.max(step, Math.ceil((end + 1) / step) * step);
}

function tickStep(end: number): number {
  for (const s of [1000, 2000, 5000, 10_000, 30_000, 60_000, 300_000, 600_000, 1_800_000, 3_600_000]) {
    if (end / s <= 8) return s;
  }
  return 7_200_000;
}

const pct = (v: number, end: number) => `${((v / end) * 100).toFixed(3)}%`;
const minWidth = 0.25; // percent: a hit of 0 ms is still visible and clickable

export function hitLabel(h: LabelHit): string {
  const end = h.endTimecode ? `–${h.endTimecode}` : "";
  return `${h.label} at ${h.startTimecode}${end}`;
}

export function Timeline({ hits, selected, onSelect }: { hits: readonly TimedHit[]; selected?: number; onSelect: (index: number) => void }) {
  const end = timelineEnd(hits.map((t) => t.hit));
  const step = tickStep(end);
  const ticks = [];
  for (let t = 0; t <= end; t += step) ticks.push(t);
  const rows = { transcript: 14, frame: 30, hit: 46 };
  const bar = (start: number, stop: number | undefined, y: number, h: number, cls: string) => {
    const w = Math.max(minWidth, (((stop ?? start) - start) / end) * 100);
    return <rect class={cls} x={pct(start, end)} y={y} width={`${w.toFixed(3)}%`} height={h} />;
  };
  return (
    <figure class="timeline">
      <svg role="group" aria-label={`Timeline of ${hits.length} hits, 0 to ${timecode(end)}`} width="100%" height="86" data-end-ms={end}>
        {hits.map(({ index, hit }) => {
          const start = ms(hit.startMs) ?? 0;
          const fs = ms(hit.frameStartMs);
          const ts = ms(hit.transcriptStartMs);
          const isSel = index === selected;
          return (
            <g key={index} class={isSel ? "hit selected" : "hit"} onClick={() => onSelect(index)}>
              <title>{hitLabel(hit)}</title>
              {ts !== undefined && bar(ts, ms(hit.transcriptEndMs), rows.transcript, 6, "transcript-bound")}
              {fs !== undefined && bar(fs, ms(hit.frameEndMs), rows.frame, 6, "frame-bound")}
              <rect
                class="marker"
                data-index={index}
                data-start-ms={start}
                aria-label={hitLabel(hit)}
                x={pct(start, end)}
                y={rows.hit}
                width={`${Math.max(minWidth, (((ms(hit.endMs) ?? start) - start) / end) * 100).toFixed(3)}%`}
                height="14"
              />
            </g>
          );
        })}
        <line class="axis" x1="0" x2="100%" y1="64" y2="64" />
        {ticks.map((t, i) => (
          <g key={t} class={i % 2 ? "odd" : undefined}>
            <line class="tick" x1={pct(t, end)} x2={pct(t, end)} y1="64" y2="68" />
            <text class="tick-label" x={pct(t, end)} y="82" text-anchor={t === 0 ? "start" : t >= end ? "end" : "middle"}>
              {timecode(t).replace(/\.000$/, "")}
            </text>
          </g>
        ))}
      </svg>
      <figcaption>
        Marker rows, top to bottom: the transcript chunk of each hit, its frame segment, the hit itself. Select a hit in the table
        below (or click its marker) to see its bounds.
      </figcaption>
    </figure>
  );
}
