// Two dataset runs of a label side by side: their figures with the change
// in percentage points, and exactly the examples whose outcome changed,
// each marked fixed (now as expected), broken (was as expected) or changed.
import { api, must, type Schemas } from "../api";
import { delta, ratio } from "../components/Metrics";
import { OutcomeBadge } from "../components/ReportTree";
import { Pager, usePages } from "../components/Pager";
import { Empty, Show } from "../components/States";
import { formatTime, shortId } from "../format";
import { useLoad } from "../hooks";
import { href } from "../router";
import { loadExamples, loadRun, missingExample, versionName } from "./datasetRunData";
import { exampleContent, expectedBadge } from "./LabelExamples";

type Run = Schemas["DatasetRun"];
type Version = Schemas["LabelVersion"];

export function Compare({ labelId, runId, baseId, versions }: { labelId: string; runId: string; baseId: string; versions: readonly Version[] }) {
  const pair = useLoad(() => Promise.all([loadRun(labelId, baseId), loadRun(labelId, runId)]), [labelId, runId, baseId]);
  const examples = useLoad(() => loadExamples(labelId), [labelId]);
  const pages = usePages();
  const token = pages.token;
  const changes = useLoad(
    () =>
      must(
        api.GET("/v1/labels/{labelId}/dataset-runs/{datasetRunId}/compare", {
          params: { path: { labelId, datasetRunId: runId }, query: { baseDatasetRunId: baseId, ...(token ? { page_token: token } : {}) } },
        }),
      ),
    [labelId, runId, baseId, token],
  );
  const rows: [string, (r: Run) => number | undefined][] = [
    ["Precision", (r) => r.precision],
    ["Recall", (r) => r.recall],
    ["F1", (r) => r.f1],
    ["Accuracy", (r) => r.accuracy],
  ];
  return (
    <section class="compare" aria-label="Compare two runs">
      <p class="crumbs">
        <a href={href(["labels", labelId], { tab: "runs" })}>All runs</a> /{" "}
        <a href={href(["labels", labelId], { tab: "runs", run: runId })}>this run</a> /
      </p>
      <Show value={pair} what="runs">
        {([base, run]) => (
          <div class="table-wrap">
            <table class="compare-figures">
              <caption>
                {versionName(versions, run.labelVersionId)} ({formatTime(run.created)}) against {versionName(versions, base.labelVersionId)} (
                {formatTime(base.created)})
              </caption>
              <thead>
                <tr>
                  <th scope="col">Figure</th>
                  <th scope="col">Base: {versionName(versions, base.labelVersionId)}</th>
                  <th scope="col">This run: {versionName(versions, run.labelVersionId)}</th>
                  <th scope="col">Change</th>
                </tr>
              </thead>
              <tbody>
                {rows.map(([name, f]) => (
                  <tr key={name} data-figure={name.toLowerCase()}>
                    <th scope="row">{name}</th>
                    <td data-label="Base">{ratio(f(base))}</td>
                    <td data-label="This run">{ratio(f(run))}</td>
                    <td data-label="Change">{delta(f(run), f(base))}</td>
                  </tr>
                ))}
                <tr>
                  <th scope="row">TP / FP / TN / FN / failed</th>
                  <td data-label="Base">
                    {base.truePositives} / {base.falsePositives} / {base.trueNegatives} / {base.falseNegatives} / {base.failed}
                  </td>
                  <td data-label="This run">
                    {run.truePositives} / {run.falsePositives} / {run.trueNegatives} / {run.falseNegatives} / {run.failed}
                  </td>
                  <td />
                </tr>
              </tbody>
            </table>
          </div>
        )}
      </Show>
      <h3>Examples whose outcome changed</h3>
      <Show value={changes} what="changes">
        {(page) => {
          const loaded = examples.state === "ok" ? examples.data : undefined;
          return page.changes.length === 0 ? (
            <Empty>No example changed its outcome.</Empty>
          ) : (
            <>
              <div class="table-wrap">
                <table class="changes">
                  <caption class="visually-hidden">Changed examples</caption>
                  <thead>
                    <tr>
                      <th scope="col">Example</th>
                      <th scope="col">Expected</th>
                      <th scope="col">Base</th>
                      <th scope="col">This run</th>
                      <th scope="col">Effect</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.changes.map((c) => {
                      const e = loaded?.byId.get(c.exampleId);
                      const want = c.expectedOutcome === "EVALUATION_RESULT_TRUE" ? "OUTCOME_TRUE" : "OUTCOME_FALSE";
                      const effect = c.outcome === want ? "fixed" : c.baseOutcome === want ? "broken" : "changed";
                      return (
                        <tr key={c.exampleId} data-example={c.exampleId} data-effect={effect}>
                          <td data-label="Example" class="example-text">
                            {e ? exampleContent(e) : `${shortId(c.exampleId)} (${missingExample(loaded)})`}
                          </td>
                          <td data-label="Expected">{expectedBadge(c.expectedOutcome)}</td>
                          <td data-label="Base">
                            <OutcomeBadge outcome={c.baseOutcome} />
                          </td>
                          <td data-label="This run">
                            <OutcomeBadge outcome={c.outcome} />
                          </td>
                          <td data-label="Effect">
                            <span class={`badge effect-${effect}`}>{effect}</span>
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
              <Pager what="changes" pages={pages} nextPageToken={page.nextPageToken} />
            </>
          );
        }}
      </Show>
    </section>
  );
}
