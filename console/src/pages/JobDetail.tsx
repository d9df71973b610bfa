// One job: its facts, the JobError of a failed job, each content item with
// its flagged text and folding report, the label hits (on a timeline for
// video and audio), and the feedback given on it.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, must, session, type FeedbackAnnotation, type Job, type LabelHit, type Schemas } from "../api";
import { FeedbackButtons, FeedbackList } from "../components/Feedback";
import { SpanExcerpts } from "../components/Highlight";
import { ReportTree, reportSpans } from "../components/ReportTree";
import { Empty, Show } from "../components/States";
import { Timeline, hitLabel, type TimedHit } from "../components/Timeline";
import { enumName, formatScore, formatTime, ms, shortId, timecode } from "../format";
import { useLoad } from "../hooks";
import { href } from "../router";

// The console reads at most this many hits of a job (10 pages of 1,000);
// the page says so when there are more.
const maxHits = 10_000;
const maxFeedback = 5_000;

interface Hits {
  hits: LabelHit[];
  truncated: boolean;
}

async function loadHits(jobUuid: string): Promise<Hits> {
  const hits: LabelHit[] = [];
  let pageToken: string | undefined;
  for (;;) {
    const page = await must(
      api.GET("/v1/jobs/{jobUuid}/labels", { params: { path: { jobUuid }, query: { pageSize: 1000, ...(pageToken ? { pageToken } : {}) } } }),
    );
    hits.push(...(page.labels ?? []));
    pageToken = page.nextPageToken;
    if (!pageToken) return { hits, truncated: false };
    if (hits.length >= maxHits) return { hits, truncated: true };
  }
}

async function loadFeedback(jobUuid: string): Promise<FeedbackAnnotation[]> {
  const out: FeedbackAnnotation[] = [];
  let page_token: string | undefined;
  do {
    const page = await must(
      api.GET("/v1/jobs/{jobUuid}/feedback", { params: { path: { jobUuid }, query: { page_size: 1000, ...(page_token ? { page_token } : {}) } } }),
    );
    out.push(...page.annotations);
    page_token = page.nextPageToken;
  } while (page_token && out.length < maxFeedback);
  return out;
}

const terminal = new Set(["JOB_STATUS_COMPLETED", "JOB_STATUS_FAILED", "JOB_STATUS_CANCELED"]);

export function JobDetail({ jobUuid }: { jobUuid: string }) {
  const job = useLoad(() => must(api.GET("/v1/jobs/{jobUuid}", { params: { path: { jobUuid } } })).then((r) => r.job), [jobUuid]);
  const current = job.state === "ok" ? job.data : null;

  // A job still queued or running is read again until it ends.
  useEffect(() => {
    if (!current || terminal.has(current.status)) return;
    const t = setTimeout(job.reload, 2000);
    return () => clearTimeout(t);
  }, [current, job.reload]);

  return (
    <Show value={job} what="job">
      {(j) => <JobView job={j} />}
    </Show>
  );
}

function JobView({ job }: { job: Job }) {
  const complete = job.status === "JOB_STATUS_COMPLETED";
  // A reviewer key reads the job of its items but gives no feedback here
  // (its decisions are the feedback) and may not read the job's feedback.
  const reviewer = session.accountType() === "reviewer";
  const hits = useLoad(() => (complete ? loadHits(job.jobUuid) : Promise.resolve({ hits: [], truncated: false })), [job.jobUuid, complete]);
  const feedback = useLoad(() => (reviewer ? Promise.resolve([]) : loadFeedback(job.jobUuid)), [job.jobUuid, reviewer]);
  const onSaved = reviewer ? undefined : () => feedback.reload();

  return (
    <article class="job" data-job={job.jobUuid} data-status={job.status}>
      <p class="crumbs">{reviewer ? <a href={href(["review"])}>Review</a> : <a href={href(["jobs"])}>Jobs</a>} /</p>
      <h1>
        Job <span class="mono">{shortId(job.jobUuid)}</span>{" "}
        <span class={`badge status-${enumName(job.status, "JOB_STATUS_").toLowerCase()}`}>{enumName(job.status, "JOB_STATUS_")}</span>
      </h1>
      <JobFacts job={job} />
      {job.error && <JobErrorBox error={job.error} title="The job failed" />}
      {!terminal.has(job.status) && <p class="note" role="status">This job is not finished; the page refreshes until it is.</p>}

      <section aria-labelledby="items-title">
        <h2 id="items-title">Content ({job.contentData.length})</h2>
        {job.contentData.map((c, i) => (
          <ItemView key={i} index={i} summary={c} result={job.results?.[i]} jobUuid={job.jobUuid} onSaved={onSaved} />
        ))}
      </section>

      {complete && (
        <section aria-labelledby="hits-title">
          <h2 id="hits-title">Label hits</h2>
          <Show value={hits} what="label hits">
            {(h) => <HitsView hits={h} jobUuid={job.jobUuid} onSaved={onSaved} />}
          </Show>
        </section>
      )}

      {!reviewer && (
        <section aria-labelledby="feedback-title">
          <h2 id="feedback-title">Feedback</h2>
          <Show value={feedback} what="feedback">
            {(list) => (list.length === 0 ? <Empty>No feedback on this job yet.</Empty> : <FeedbackList annotations={list} />)}
          </Show>
        </section>
      )}
    </article>
  );
}

function JobFacts({ job }: { job: Job }) {
  const rows: [string, string][] = [
    ["Job id", job.jobUuid],
    ["Type", enumName(job.jobType, "JOB_TYPE_")],
    ["Created", formatTime(job.created)],
    ["Updated", formatTime(job.updated)],
  ];
  if (job.completed) rows.push(["Completed", formatTime(job.completed)]);
  if (job.policyId) rows.push(["Policy", job.policyId], ["Policy version", job.policyVersionId ?? ""]);
  if (job.labelId) rows.push(["Label", job.labelId], ["Label version", job.labelVersionId ?? ""]);
  rows.push(["Threshold", String(job.threshold)], ["Expedited", job.expedited ? "yes" : "no"]);
  return (
    <dl class="facts">
      {rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd class={k.endsWith("id") || k.startsWith("Policy") || k.startsWith("Label") ? "mono" : undefined}>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

export function JobErrorBox({ error, title }: { error: Schemas["JobError"]; title: string }) {
  return (
    <div class="state error job-error" role="alert" data-reason={error.reason}>
      <h2>{title}</h2>
      <p>
        <code>{error.reason}</code>
      </p>
      <p>{error.message}</p>
    </div>
  );
}

function MetadataTable({ metadata, caption }: { metadata: Record<string, string> | undefined; caption: string }) {
  const entries = Object.entries(metadata ?? {});
  if (entries.length === 0) return null;
  return (
    <table class="metadata">
      <caption>{caption}</caption>
      <tbody>
        {entries.map(([k, v]) => (
          <tr key={k}>
            <th scope="row">{k}</th>
            <td>{v}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function sameMetadata(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ea = Object.entries(a ?? {});
  return ea.length === Object.keys(b ?? {}).length && ea.every(([k, v]) => b?.[k] === v);
}

function ItemView({
  index,
  summary,
  result,
  jobUuid,
  onSaved,
}: {
  index: number;
  summary: Schemas["ContentSummary"];
  result: Schemas["JobResult"] | undefined;
  jobUuid: string;
  onSaved?: (a: FeedbackAnnotation) => void;
}) {
  const spans = result?.report ? reportSpans(result.report) : [];
  return (
    <article class="item" data-item={index}>
      <h3>
        Item {index + 1} {result?.report && <span class="meta">result {shortId(result.jobResultId)}</span>}
      </h3>
      {summary.contentHash && (
        <p class="meta">
          Content hash <span class="mono">{summary.contentHash}</span>
        </p>
      )}
      <MetadataTable metadata={summary.metadata} caption="Metadata" />
      {result?.error && <JobErrorBox error={result.error} title="This item failed" />}
      {spans.length > 0 && (
        <div class="flagged">
          <h4>Flagged text</h4>
          <SpanExcerpts spans={spans} />
          <p class="hint">The server keeps hashes, not the content: the matched parts are shown alone, in text order.</p>
        </div>
      )}
      {result?.report && (
        <>
          {!sameMetadata(result.report.contentMetadata, summary.metadata) && (
            <MetadataTable metadata={result.report.contentMetadata} caption="Content metadata of the report" />
          )}
          <ReportTree report={result.report} feedback={onSaved && { jobUuid, jobResultId: result.jobResultId, onSaved }} />
        </>
      )}
    </article>
  );
}

const timed = (h: LabelHit) => h.modality === "MODALITY_VIDEO" || h.modality === "MODALITY_AUDIO";

function bounds(start: string | undefined, end: string | undefined): string {
  const s = ms(start);
  if (s === undefined) return "";
  const e = ms(end);
  return `${timecode(s)}${e !== undefined ? `–${timecode(e)}` : ""}`;
}

function HitsView({ hits, jobUuid, onSaved }: { hits: Hits; jobUuid: string; onSaved?: (a: FeedbackAnnotation) => void }) {
  const [selected, setSelected] = useState<number | undefined>(undefined);
  if (hits.hits.length === 0) return <Empty>No labels were hit.</Empty>;

  // One timeline per result with timed hits.
  const byResult = new Map<string, TimedHit[]>();
  hits.hits.forEach((hit, index) => {
    if (!timed(hit)) return;
    const list = byResult.get(hit.jobResultId) ?? [];
    list.push({ index, hit });
    byResult.set(hit.jobResultId, list);
  });
  const sel = selected !== undefined ? hits.hits[selected] : undefined;

  return (
    <div class="hits" data-hit-count={hits.hits.length}>
      {hits.truncated && (
        <p class="note" role="status">
          Showing the first {hits.hits.length} hits.
        </p>
      )}
      {[...byResult.entries()].map(([resultId, list]) => (
        <div key={resultId}>
          {byResult.size > 1 && <h3>Result {shortId(resultId)}</h3>}
          <Timeline hits={list} selected={selected} onSelect={setSelected} />
        </div>
      ))}
      {sel && selected !== undefined && <HitDetail key={selected} hit={sel} jobUuid={jobUuid} onSaved={onSaved} onClose={() => setSelected(undefined)} />}
      <div class="table-wrap">
        <table class="hit-table">
          <caption class="visually-hidden">Label hits in recorded order</caption>
          <thead>
            <tr>
              <th scope="col">Label</th>
              <th scope="col">At</th>
              <th scope="col">Modality</th>
              <th scope="col">Score</th>
              <th scope="col">Frames</th>
              <th scope="col">Transcript</th>
              <th scope="col">Matched</th>
            </tr>
          </thead>
          <tbody>
            {hits.hits.map((h, i) => (
              <tr key={i} class={i === selected ? "selected" : undefined} data-hit={i}>
                <td data-label="Label">{h.label}</td>
                <td data-label="At">
                  {timed(h) ? (
                    <button type="button" class="link mono" aria-pressed={i === selected} aria-label={`Select ${hitLabel(h)}`} onClick={() => setSelected(i)}>
                      {h.startTimecode}
                      {h.endTimecode ? `–${h.endTimecode}` : ""}
                    </button>
                  ) : (
                    <span class="meta">—</span>
                  )}
                </td>
                <td data-label="Modality">{enumName(h.modality, "MODALITY_")}</td>
                <td data-label="Score">{formatScore(h.score)}</td>
                <td data-label="Frames" class="mono">
                  {bounds(h.frameStartMs, h.frameEndMs)}
                </td>
                <td data-label="Transcript" class="mono">
                  {bounds(h.transcriptStartMs, h.transcriptEndMs)}
                </td>
                <td data-label="Matched">{h.spans && <SpanExcerpts spans={h.spans} />}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

function HitDetail({ hit, jobUuid, onSaved, onClose }: { hit: LabelHit; jobUuid: string; onSaved?: (a: FeedbackAnnotation) => void; onClose: () => void }) {
  // The panel takes the focus when a hit is chosen, which also scrolls it
  // into view from a row far down the table.
  const panel = useRef<HTMLDivElement>(null);
  useEffect(() => panel.current?.focus(), []);
  const occurrence: Schemas["Occurrence"] = { modality: hit.modality, startMs: hit.startMs, ...(hit.endMs ? { endMs: hit.endMs } : {}) };
  return (
    <div class="hit-detail" ref={panel} tabIndex={-1} role="region" aria-label={`Selected hit: ${hitLabel(hit)}`} data-selected-hit={hit.startMs}>
      <h3>
        {hit.label} <span class="mono">{hit.startTimecode}</span>
        {hit.endTimecode && <span class="mono">–{hit.endTimecode}</span>}
      </h3>
      <dl class="facts">
        <div>
          <dt>Score</dt>
          <dd>{formatScore(hit.score)}</dd>
        </div>
        <div>
          <dt>Frame segment</dt>
          <dd class="mono">{hit.frameStartTimecode ? `${hit.frameStartTimecode}–${hit.frameEndTimecode ?? ""}` : "none"}</dd>
        </div>
        <div>
          <dt>Transcript chunk</dt>
          <dd class="mono">{hit.transcriptStartTimecode ? `${hit.transcriptStartTimecode}–${hit.transcriptEndTimecode ?? ""}` : "none"}</dd>
        </div>
      </dl>
      {hit.spans && hit.spans.length > 0 && <SpanExcerpts spans={hit.spans} />}
      {onSaved && (
        <>
          <p>Was this occurrence right?</p>
          <FeedbackButtons target={{ jobUuid, jobResultId: hit.jobResultId, label: hit.label, actual: "TRUE", occurrence }} onSaved={onSaved} />
        </>
      )}
      <button type="button" class="link" onClick={onClose}>
        Close
      </button>
    </div>
  );
}
