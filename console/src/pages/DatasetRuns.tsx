// Dataset runs of a label: run a version over the label's examples, watch
// its counts grow, read precision, recall, F1 and accuracy, look at the
// examples it got wrong with their reports, and compare two runs (their
// figures side by side and exactly the examples whose outcome changed).
// The run and the compared run are in the fragment
// (#/labels/ID?tab=runs&run=R&base=B), so a comparison can be shared.
import { useEffect, useState } from "preact/hooks";
import { api, must, type Schemas } from "../api";
import { RatioCells, ratio } from "../components/Metrics";
import { OutcomeBadge, ReportTree, reportSpans } from "../components/ReportTree";
import { HighlightedText } from "../components/Highlight";
import { Pager, usePages } from "../components/Pager";
import { Empty, ErrorNote, Show } from "../components/States";
import { enumName, formatScore, formatTime, shortId } from "../format";
import { useAction, useLoad, type Loaded } from "../hooks";
import { href, navigate, type Route } from "../router";
import { loadExamples, loadRun, missingExample, versionName, type Example } from "./datasetRunData";
import { Compare } from "./DatasetRunCompare";
import { exampleContent, expectedBadge } from "./LabelExamples";
import { VersionSelect } from "./VersionSelect";

type Run = Schemas["DatasetRun"];
type Version = Schemas["LabelVersion"];
type Result = Schemas["DatasetRunResult"];

const pollMs = 1000;

export function runActive(r: Run): boolean {
  return r.state === "DATASET_RUN_STATE_PENDING" || r.state === "DATASET_RUN_STATE_RUNNING";
}

function runState(r: Run): string {
  return enumName(r.state, "DATASET_RUN_STATE_");
}

// usePoll reloads a loaded value every pollMs while active says so.
function usePoll<T>(value: Loaded<T>, active: (data: T) => boolean): void {
  const data = value.state === "ok" ? value.data : undefined;
  useEffect(() => {
    if (data === undefined || !active(data)) return;
    const t = setTimeout(value.reload, pollMs);
    return () => clearTimeout(t);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [data]);
}


export function DatasetRuns({ labelId, versions, route }: { labelId: string; versions: readonly Version[]; route: Route }) {
  const runId = route.query.get("run") ?? "";
  const baseId = route.query.get("base") ?? "";
  const runs = useLoad(() => must(api.GET("/v1/labels/{labelId}/dataset-runs", { params: { path: { labelId }, query: { page_size: 100 } } })), [labelId]);
  usePoll(runs, (d) => d.datasetRuns.some(runActive));
  if (runId && baseId) return <Compare labelId={labelId} runId={runId} baseId={baseId} versions={versions} />;
  if (runId) return <RunDetail labelId={labelId} runId={runId} versions={versions} runs={runs.state === "ok" ? runs.data.datasetRuns : []} />;
  return (
    <section class="dataset-runs" aria-label="Dataset runs">
      <StartRun labelId={labelId} versions={versions} onStarted={runs.reload} />
      <Show value={runs} what="dataset runs">
        {(page) =>
          page.datasetRuns.length === 0 ? (
            <Empty>No runs yet. Add examples, then run a version on them.</Empty>
          ) : (
            <RunTable labelId={labelId} runs={page.datasetRuns} versions={versions} />
          )
        }
      </Show>
    </section>
  );
}

function StartRun({ labelId, versions, onStarted }: { labelId: string; versions: readonly Version[]; onStarted: () => void }) {
  const [versionId, setVersionId] = useState(versions[versions.length - 1]?.labelVersionId ?? "");
  const [threshold, setThreshold] = useState("");
  const t = threshold === "" ? undefined : Number(threshold);
  const badThreshold = t !== undefined && !(t >= 0 && t <= 1);
  const start = useAction(async () => {
    await must(
      api.POST("/v1/labels/{labelId}/versions/{labelVersionId}/dataset-runs", {
        params: { path: { labelId, labelVersionId: versionId } },
        body: t !== undefined ? { threshold: t } : {},
      }),
    );
    onStarted();
  });
  if (versions.length === 0) return <Empty>Publish a version first.</Empty>;
  return (
    <form class="filters start-run" onSubmit={start.onSubmit} aria-label="Start a dataset run">
      <VersionSelect versions={versions} value={versionId} onChange={setVersionId} />
      <label>
        Threshold (empty: the version's)
        <input type="text" inputMode="decimal" size={6} value={threshold} onInput={(e) => setThreshold(e.currentTarget.value)} aria-invalid={badThreshold} />
      </label>
      <button type="submit" disabled={start.busy || badThreshold}>
        Run on the dataset
      </button>
      <ErrorNote error={start.error} />
    </form>
  );
}

function RunTable({ labelId, runs, versions }: { labelId: string; runs: readonly Run[]; versions: readonly Version[] }) {
  return (
    <div class="table-wrap">
      <table class="runs">
        <caption class="visually-hidden">Dataset runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">Version</th>
            <th scope="col">State</th>
            <th scope="col">TP / FP / TN / FN / failed</th>
            <th scope="col">Precision</th>
            <th scope="col">Recall</th>
            <th scope="col">F1</th>
            <th scope="col">Accuracy</th>
            <th scope="col">Compare</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r, i) => {
            const older = runs.slice(i + 1).find((o) => !runActive(o));
            return (
              <tr key={r.datasetRunId} data-run={r.datasetRunId} data-state={r.state}>
                <td data-label="Run">
                  <a href={href(["labels", labelId], { tab: "runs", run: r.datasetRunId })}>{formatTime(r.created)}</a>
                </td>
                <td data-label="Version">{versionName(versions, r.labelVersionId)}</td>
                <td data-label="State">
                  <span class={`badge run-${runState(r).toLowerCase()}`}>{runState(r)}</span>
                  {runActive(r) && (
                    <progress max={r.exampleCount} value={r.truePositives + r.falsePositives + r.trueNegatives + r.falseNegatives + r.failed} />
                  )}
                </td>
                <td data-label="TP / FP / TN / FN / failed">
                  {r.truePositives} / {r.falsePositives} / {r.trueNegatives} / {r.falseNegatives} / {r.failed} of {r.exampleCount}
                </td>
                <RatioCells rates={{ precision: r.precision, recall: r.recall, f1: r.f1, accuracy: r.accuracy }} />
                <td data-label="Compare">
                  {older && !runActive(r) && (
                    <a href={href(["labels", labelId], { tab: "runs", run: r.datasetRunId, base: older.datasetRunId })}>
                      with {versionName(versions, older.labelVersionId)} at {formatTime(older.created)}
                    </a>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function RunFacts({ run, versions }: { run: Run; versions: readonly Version[] }) {
  return (
    <dl class="facts run-facts" data-run={run.datasetRunId} data-state={run.state}>
      <div>
        <dt>Version</dt>
        <dd>{versionName(versions, run.labelVersionId)}</dd>
      </div>
      <div>
        <dt>State</dt>
        <dd>{runState(run)}</dd>
      </div>
      <div>
        <dt>Threshold</dt>
        <dd>{run.threshold}</dd>
      </div>
      <div>
        <dt>Counts</dt>
        <dd>
          TP {run.truePositives}, FP {run.falsePositives}, TN {run.trueNegatives}, FN {run.falseNegatives}, failed {run.failed} of {run.exampleCount}
        </dd>
      </div>
      <div>
        <dt>Precision</dt>
        <dd data-metric="precision">{ratio(run.precision)}</dd>
      </div>
      <div>
        <dt>Recall</dt>
        <dd data-metric="recall">{ratio(run.recall)}</dd>
      </div>
      <div>
        <dt>F1</dt>
        <dd data-metric="f1">{ratio(run.f1)}</dd>
      </div>
      <div>
        <dt>Accuracy</dt>
        <dd data-metric="accuracy">{ratio(run.accuracy)}</dd>
      </div>
      <div>
        <dt>Created</dt>
        <dd>{formatTime(run.created)}</dd>
      </div>
      {run.completed && (
        <div>
          <dt>Finished</dt>
          <dd>{formatTime(run.completed)}</dd>
        </div>
      )}
    </dl>
  );
}

// A result is an error when the run's outcome is not the expected one.
function resultKind(r: Result): "ok" | "fp" | "fn" | "failed" {
  const a = r.actualOutcome;
  if (a === "OUTCOME_TRUE") return r.expectedOutcome === "EVALUATION_RESULT_TRUE" ? "ok" : "fp";
  if (a === "OUTCOME_FALSE") return r.expectedOutcome === "EVALUATION_RESULT_TRUE" ? "fn" : "ok";
  return "failed";
}
const kindName = { ok: "right", fp: "false positive", fn: "false negative", failed: "failed" } as const;

function RunDetail({ labelId, runId, versions, runs }: { labelId: string; runId: string; versions: readonly Version[]; runs: readonly Run[] }) {
  const run = useLoad(() => loadRun(labelId, runId), [labelId, runId]);
  usePoll(run, runActive);
  const examples = useLoad(() => loadExamples(labelId), [labelId]);
  const [errorsOnly, setErrorsOnly] = useState(true);
  const pages = usePages();
  const token = pages.token;
  const finished = run.state === "ok" && !runActive(run.data);
  const results = useLoad(
    () =>
      must(
        api.GET("/v1/labels/{labelId}/dataset-runs/{datasetRunId}/results", {
          params: { path: { labelId, datasetRunId: runId }, query: { page_size: 1000, ...(token ? { page_token: token } : {}) } },
        }),
      ),
    [labelId, runId, token, finished],
  );
  const others = runs.filter((r) => r.datasetRunId !== runId && !runActive(r));
  return (
    <section class="run" aria-label="Dataset run">
      <p class="crumbs">
        <a href={href(["labels", labelId], { tab: "runs" })}>All runs</a> /
      </p>
      <Show value={run} what="dataset run">
        {(r) => (
          <>
            <h2>
              Run of {versionName(versions, r.labelVersionId)} <span class="mono meta">{r.datasetRunId}</span>
            </h2>
            <RunFacts run={r} versions={versions} />
            {others.length > 0 && !runActive(r) && (
              <label>
                Compare with
                <select
                  value=""
                  onChange={(e) => e.currentTarget.value && navigate(href(["labels", labelId], { tab: "runs", run: runId, base: e.currentTarget.value }))}
                >
                  <option value="">choose a run…</option>
                  {others.map((o) => (
                    <option key={o.datasetRunId} value={o.datasetRunId}>
                      {versionName(versions, o.labelVersionId)} at {formatTime(o.created)} (F1 {ratio(o.f1)})
                    </option>
                  ))}
                </select>
              </label>
            )}
          </>
        )}
      </Show>
      <h3>Results</h3>
      <label class="inline">
        <input type="checkbox" checked={errorsOnly} onChange={(e) => setErrorsOnly(e.currentTarget.checked)} /> Only the examples it got wrong or could
        not evaluate
      </label>
      <Show value={results} what="results">
        {(page) => {
          const shown = errorsOnly ? page.results.filter((x) => resultKind(x) !== "ok") : page.results;
          const loaded = examples.state === "ok" ? examples.data : undefined;
          return (
            <>
              {shown.length === 0 ? (
                <Empty>{errorsOnly ? "No wrong or failed examples on this page." : "No results yet."}</Empty>
              ) : (
                <ul class="results">
                  {shown.map((x) => (
                    <ResultItem key={x.exampleId} result={x} example={loaded?.byId.get(x.exampleId)} missing={missingExample(loaded)} />
                  ))}
                </ul>
              )}
              <Pager what="results" pages={pages} nextPageToken={page.nextPageToken} note="1,000 results a page" />
            </>
          );
        }}
      </Show>
    </section>
  );
}

function ResultItem({ result, example, missing }: { result: Result; example: Example | undefined; missing: string }) {
  const kind = resultKind(result);
  const text = example?.contentData.text;
  return (
    <li class={`result result-${kind}`} data-example={result.exampleId} data-kind={kind}>
      <div class="assertion-head">
        <span class={`badge kind-${kind}`}>{kindName[kind]}</span> expected {expectedBadge(result.expectedOutcome)} got{" "}
        <OutcomeBadge outcome={result.actualOutcome} />
        <span class="score" title="score">
          {formatScore(result.score)}
        </span>
        {!example && (
          <span class="meta">
            example {shortId(result.exampleId)} ({missing})
          </span>
        )}
      </div>
      {text !== undefined && result.report ? (
        <HighlightedText text={text} spans={reportSpans(result.report)} />
      ) : (
        example && <p class="flagged-text">{exampleContent(example)}</p>
      )}
      {result.error && <p class="note error">{result.error}</p>}
      {result.report && (
        <details class="result-report">
          <summary>Report</summary>
          <ReportTree report={result.report} />
        </details>
      )}
    </li>
  );
}
