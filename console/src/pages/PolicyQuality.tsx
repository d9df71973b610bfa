// What a policy page shows of a version's quality: the shadow version's
// agreement with the live one (per label) and the live jobs where they
// disagreed, each a link to the job; a version's live metrics; and the
// Activate button.
import { useState } from "preact/hooks";
import { api, must, type Schemas } from "../api";
import { LiveMetrics } from "../components/Metrics";
import { OutcomeBadge } from "../components/ReportTree";
import { Pager, usePages } from "../components/Pager";
import { Empty, ErrorNote, Show } from "../components/States";
import { shortId } from "../format";
import { useAction, useLoad } from "../hooks";
import { href } from "../router";

type Policy = Schemas["Policy"];
type Version = Schemas["PolicyVersion"];

export function ActivateButton({ policy, version, onActivated }: { policy: Policy; version: Version; onActivated: () => void }) {
  const activate = useAction(async () => {
    await must(
      api.POST("/v1/policies/{policyId}/versions/{policyVersionId}/activate", {
        params: { path: { policyId: policy.policyId, policyVersionId: version.policyVersionId } },
      }),
    );
    onActivated();
  });
  return (
    <>
      <button type="button" class="activate" disabled={activate.busy} onClick={() => activate.run()} aria-label={`Activate v${version.sequentialVersion}`}>
        Activate
      </button>
      <ErrorNote error={activate.error} />
    </>
  );
}

export function ShadowPanel({ policy, version }: { policy: Policy; version: Version }) {
  const policyId = policy.policyId;
  const policyVersionId = version.policyVersionId;
  const [tick, setTick] = useState(0);
  const stats = useLoad(
    () => must(api.GET("/v1/policies/{policyId}/versions/{policyVersionId}/shadow-stats", { params: { path: { policyId, policyVersionId } } })),
    [policyId, policyVersionId, tick],
  );
  const pages = usePages();
  const token = pages.token;
  const results = useLoad(
    () =>
      must(
        api.GET("/v1/policies/{policyId}/versions/{policyVersionId}/shadow-results", {
          params: { path: { policyId, policyVersionId }, query: { pageSize: 100, ...(token ? { pageToken: token } : {}) } },
        }),
      ),
    [policyId, policyVersionId, token, tick],
  );
  const live = policy.shadowVersionId === policyVersionId;
  return (
    <section class="shadow" aria-labelledby="shadow-title">
      <h2 id="shadow-title">
        Shadow evaluations of v{version.sequentialVersion}{" "}
        {live && <span class="badge shadow">shadow at {((policy.shadowSampleRate ?? 1) * 100).toFixed(0)}% of live jobs</span>}
      </h2>
      <p class="meta">
        Evaluated from the queue after each live job's result is recorded, so the counts trail the traffic.{" "}
        <button type="button" class="link" onClick={() => setTick((t) => t + 1)}>
          Refresh
        </button>
      </p>
      <Show value={stats} what="shadow stats">
        {(s) => (
          <>
            <p class="shadow-summary" data-evaluated={s.evaluated} data-agreements={s.agreements} data-disagreements={s.disagreements}>
              {s.evaluated} live results evaluated: {s.agreements} agreed on every label, {s.disagreements} did not.
            </p>
            {s.labels.length > 0 && (
              <div class="table-wrap">
                <table class="shadow-labels">
                  <caption class="visually-hidden">Per label, how often each version found it TRUE</caption>
                  <thead>
                    <tr>
                      <th scope="col">Label</th>
                      <th scope="col">Live TRUE</th>
                      <th scope="col">Shadow TRUE</th>
                      <th scope="col">Both TRUE</th>
                    </tr>
                  </thead>
                  <tbody>
                    {s.labels.map((l) => (
                      <tr key={l.label} data-shadow-label={l.label}>
                        <td data-label="Label">{l.label}</td>
                        <td data-label="Live TRUE">{l.activeTrue}</td>
                        <td data-label="Shadow TRUE">{l.shadowTrue}</td>
                        <td data-label="Both TRUE">{l.bothTrue}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </>
        )}
      </Show>
      <h3>Disagreements</h3>
      <Show value={results} what="disagreements">
        {(page) =>
          page.disagreements.length === 0 ? (
            <Empty>No disagreements.</Empty>
          ) : (
            <>
              <div class="table-wrap">
                <table class="disagreements">
                  <caption class="visually-hidden">Live job results where the versions disagreed, oldest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Job</th>
                      <th scope="col">Label</th>
                      <th scope="col">Live</th>
                      <th scope="col">Shadow</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.disagreements.map((d) => (
                      <tr key={`${d.jobResultId}/${d.label}`} data-job={d.jobUuid}>
                        <td data-label="Job">
                          <a href={href(["jobs", d.jobUuid])} class="mono">
                            {shortId(d.jobUuid)}
                          </a>
                        </td>
                        <td data-label="Label">{d.label}</td>
                        <td data-label="Live">
                          <OutcomeBadge outcome={d.activeOutcome} />
                        </td>
                        <td data-label="Shadow">
                          <OutcomeBadge outcome={d.shadowOutcome} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <Pager what="disagreements" pages={pages} nextPageToken={page.nextPageToken} />
            </>
          )
        }
      </Show>
    </section>
  );
}

export function PolicyVersionMetrics({ policy, version }: { policy: Policy; version: Version }) {
  const policyId = policy.policyId;
  const policyVersionId = version.policyVersionId;
  return (
    <section aria-labelledby="metrics-title">
      <h2 id="metrics-title">Live metrics of v{version.sequentialVersion}</h2>
      <LiveMetrics
        versionId={policyVersionId}
        what={`v${version.sequentialVersion} (while active, and as a shadow)`}
        load={(w) => must(api.GET("/v1/policies/{policyId}/versions/{policyVersionId}/metrics", { params: { path: { policyId, policyVersionId }, query: w } }))}
      />
    </section>
  );
}
