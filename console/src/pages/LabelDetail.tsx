// One label: its versions (each one's text), an editor that checks rules
// as they are typed and publishes a new version, and a panel to try a
// version on a text, the label's dataset examples, its dataset runs
// (precision, recall, F1, and the compare view of two runs) and a
// version's live metrics from feedback. The tab is in the fragment
// (#/labels/ID?tab=editor).
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, loadAll, must, type Schemas } from "../api";
import { HighlightedText } from "../components/Highlight";
import { OutcomeBadge, reportSpans } from "../components/ReportTree";
import { LiveMetrics } from "../components/Metrics";
import { RuleEditor } from "../components/RuleEditor";
import { Empty, ErrorNote, Show } from "../components/States";
import { formatScore, formatTime } from "../format";
import { useAction, useLoad } from "../hooks";
import { href, type Route } from "../router";
import { DatasetRuns } from "./DatasetRuns";
import { VersionSelect } from "./VersionSelect";
import { Examples } from "./LabelExamples";

type Label = Schemas["Label"];
type Version = Schemas["LabelVersion"];

function loadVersions(labelId: string): Promise<Version[]> {
  return loadAll(async (page_token) => {
    const page = await must(
      api.GET("/v1/labels/{labelId}/versions", { params: { path: { labelId }, query: { page_size: 1000, ...(page_token ? { page_token } : {}) } } }),
    );
    return { items: page.labelVersions, next: page.nextPageToken };
  });
}

const tabs = [
  ["versions", "Versions"],
  ["editor", "New version"],
  ["try", "Try it"],
  ["examples", "Examples"],
  ["runs", "Dataset runs"],
  ["metrics", "Live metrics"],
] as const;
type Tab = (typeof tabs)[number][0];

export function LabelDetail({ labelId, route }: { labelId: string; route: Route }) {
  const label = useLoad(() => must(api.GET("/v1/labels/{labelId}", { params: { path: { labelId } } })).then((r) => r.label), [labelId]);
  const versions = useLoad(() => loadVersions(labelId), [labelId]);
  const tabParam = route.query.get("tab");
  const tab: Tab = tabs.some(([t]) => t === tabParam) ? (tabParam as Tab) : "versions";
  const versionParam = route.query.get("version") ?? "";

  return (
    <Show value={label} what="label">
      {(l) => (
        <article class="label" data-label-id={l.labelId}>
          <p class="crumbs">
            <a href={href(["labels"])}>Labels</a> /
          </p>
          <h1>
            Label <span class="label-name">{l.name}</span>
          </h1>
          <LabelFacts label={l} />
          <nav class="tabs" aria-label="Label sections">
            {tabs.map(([t, name]) => (
              <a key={t} href={href(["labels", labelId], { tab: t })} aria-current={t === tab ? "page" : undefined}>
                {name}
              </a>
            ))}
          </nav>
          <Show value={versions} what="versions">
            {(vs) => {
              switch (tab) {
                case "versions":
                  return <Versions label={l} versions={vs} selected={versionParam} />;
                case "editor":
                  return <NewVersion label={l} versions={vs} from={versionParam} onCreated={versions.reload} />;
                case "try":
                  return <TryIt versions={vs} />;
                case "examples":
                  return <Examples labelId={labelId} />;
                case "runs":
                  return <DatasetRuns labelId={labelId} versions={vs} route={route} />;
                case "metrics":
                  return <VersionLiveMetrics labelId={labelId} versions={vs} />;
              }
            }}
          </Show>
        </article>
      )}
    </Show>
  );
}

function LabelFacts({ label }: { label: Label }) {
  return (
    <dl class="facts">
      <div>
        <dt>Label id</dt>
        <dd class="mono">{label.labelId}</dd>
      </div>
      {label.description && (
        <div>
          <dt>Description</dt>
          <dd>{label.description}</dd>
        </div>
      )}
      <div>
        <dt>State</dt>
        <dd>{label.archivedAt ? `archived ${formatTime(label.archivedAt)}` : label.disabled ? "disabled" : "active"}</dd>
      </div>
      <div>
        <dt>Created</dt>
        <dd>{formatTime(label.created)}</dd>
      </div>
    </dl>
  );
}

function Versions({ label, versions, selected }: { label: Label; versions: readonly Version[]; selected: string }) {
  if (versions.length === 0) {
    return (
      <Empty>
        This label has no version yet. <a href={href(["labels", label.labelId], { tab: "editor" })}>Write its rules.</a>
      </Empty>
    );
  }
  const latest = versions[versions.length - 1];
  const shown = versions.find((v) => v.labelVersionId === selected) ?? latest;
  return (
    <div class="versions">
      <div class="table-wrap">
        <table>
          <caption class="visually-hidden">Versions of {label.name}</caption>
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Created</th>
              <th scope="col">Signals</th>
              <th scope="col">Complexity</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {versions.map((v) => (
              <tr key={v.labelVersionId} class={v === shown ? "selected" : undefined} data-version={v.labelVersionId}>
                <td data-label="Version">
                  <a href={href(["labels", label.labelId], { version: v.labelVersionId })} aria-current={v === shown ? "true" : undefined}>
                    v{v.sequentialVersion}
                  </a>
                  {v === latest && <span class="badge">latest</span>}
                </td>
                <td data-label="Created">{formatTime(v.created)}</td>
                <td data-label="Signals">{v.signalCount}</td>
                <td data-label="Complexity">{v.complexityScore.toFixed(2)}</td>
                <td data-label="Description">{v.description}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {shown && (
        <section class="version-text" aria-label={`Rules of version ${shown.sequentialVersion}`}>
          <h2>
            v{shown.sequentialVersion} <span class="mono meta">{shown.labelVersionId}</span>
          </h2>
          <pre class="rules" data-version-text={shown.labelVersionId}>
            {shown.text}
          </pre>
          {shown.globalContext && (
            <>
              <h3>Global context</h3>
              <pre class="rules">{shown.globalContext}</pre>
            </>
          )}
          <a class="button" href={href(["labels", label.labelId], { tab: "editor", version: shown.labelVersionId })}>
            New version from v{shown.sequentialVersion}
          </a>
        </section>
      )}
    </div>
  );
}

function NewVersion({ label, versions, from, onCreated }: { label: Label; versions: readonly Version[]; from: string; onCreated: () => void }) {
  const base = versions.find((v) => v.labelVersionId === from) ?? versions[versions.length - 1];
  const [text, setText] = useState(base?.text ?? "");
  const [description, setDescription] = useState("");
  const [created, setCreated] = useState<Version | null>(null);
  useEffect(() => setText(base?.text ?? ""), [base?.labelVersionId, base?.text]);

  const publish = useAction(async () => {
    setCreated(null);
    const r = await must(
      api.POST("/v1/labels/{labelId}/versions", {
        params: { path: { labelId: label.labelId } },
        body: { text, ...(description ? { description } : {}), ...(base ? { parentLabelVersionId: base.labelVersionId } : {}) },
      }),
    );
    setCreated(r.labelVersion);
    setDescription("");
    onCreated();
  });
  const compileErrors = publish.error instanceof ApiError ? publish.error.compilationErrors() : [];

  return (
    <form class="new-version" onSubmit={publish.onSubmit} aria-label={`New version of ${label.name}`}>
      {base && (
        <p class="meta">
          Starting from v{base.sequentialVersion}. Publishing makes a new immutable version.
        </p>
      )}
      <RuleEditor id="label-rules" label="Rules" kind="RULES_KIND_LABEL" value={text} onChange={setText} extraErrors={compileErrors} />
      <label>
        Description of the change
        <input type="text" maxLength={10000} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={publish.busy || text.trim() === ""}>
        Publish version
      </button>
      {created && (
        <p class="note ok" role="status" data-created-version={created.labelVersionId}>
          Published v{created.sequentialVersion}.{" "}
          <a href={href(["labels", label.labelId], { version: created.labelVersionId })}>See it</a> or{" "}
          <a href={href(["labels", label.labelId], { tab: "try", version: created.labelVersionId })}>try it</a>.
        </p>
      )}
      {compileErrors.length === 0 && <ErrorNote error={publish.error} />}
    </form>
  );
}

function TryIt({ versions }: { versions: readonly Version[] }) {
  const [versionId, setVersionId] = useState(versions[versions.length - 1]?.labelVersionId ?? "");
  const [text, setText] = useState("");
  const [result, setResult] = useState<{ text: string; r: Schemas["LabelEvaluationResult"] } | null>(null);
  const evaluate = useAction(async () => {
    const r = await must(api.POST("/v1/labels/evaluate", { body: { contentData: { text }, labelVersionIds: [versionId] } }));
    const first = r.results[0];
    if (first) setResult({ text, r: first });
  });
  if (versions.length === 0) return <Empty>Publish a version first.</Empty>;

  const ev = result?.r.evaluation;
  return (
    <form class="try" onSubmit={evaluate.onSubmit} aria-label="Try a version">
      <VersionSelect versions={versions} value={versionId} onChange={setVersionId} />
      <label>
        Text
        <textarea rows={4} required value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={evaluate.busy || text === ""}>
        Evaluate
      </button>
      <p class="hint">Each evaluation is a job of the account and counts towards its quota.</p>
      <ErrorNote error={evaluate.error} />
      {result?.r.error && <p class="note error">{result.r.error}</p>}
      {ev && (
        <div class="try-result" role="status">
          <p>
            <OutcomeBadge outcome={ev.outcome} /> score {formatScore(ev.score)} at threshold {ev.threshold}
            {result.r.jobUuid && (
              <>
                {" "}
                — <a href={href(["jobs", result.r.jobUuid])}>open the job</a>
              </>
            )}
          </p>
          {ev.report && <HighlightedText text={result.text} spans={reportSpans(ev.report)} />}
        </div>
      )}
    </form>
  );
}

function VersionLiveMetrics({ labelId, versions }: { labelId: string; versions: readonly Version[] }) {
  const [versionId, setVersionId] = useState(versions[versions.length - 1]?.labelVersionId ?? "");
  if (versions.length === 0) return <Empty>Publish a version first.</Empty>;
  const v = versions.find((x) => x.labelVersionId === versionId);
  return (
    <>
      <VersionSelect versions={versions} value={versionId} onChange={setVersionId} />
      <LiveMetrics
        versionId={versionId}
        what={v ? `v${v.sequentialVersion}` : "this version"}
        load={(w) =>
          must(api.GET("/v1/labels/{labelId}/versions/{labelVersionId}/metrics", { params: { path: { labelId, labelVersionId: versionId }, query: w } }))
        }
      />
    </>
  );
}
