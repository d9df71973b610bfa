// Batch jobs of a policy-first account: state, progress, the error of a
// failed one, the output download once complete, and cancelling one that
// is still running. The list refreshes while any batch is in progress.
import { useEffect } from "preact/hooks";
import { api, must, type Schemas } from "../api";
import { Empty, ErrorNote, Show } from "../components/States";
import { enumName, formatTime, safeHref, shortId } from "../format";
import { useAction, useLoad } from "../hooks";
import { href } from "../router";

type Batch = Schemas["BatchJob"];
const terminal = new Set(["BATCH_JOB_STATE_COMPLETED", "BATCH_JOB_STATE_ERROR", "BATCH_JOB_STATE_CANCELLED"]);

export function Batches() {
  const batches = useLoad(() => must(api.GET("/v1/batch-jobs", {})).then((r) => r.batchJobs), []);
  const data = batches.state === "ok" ? batches.data : null;
  const running = data?.some((b) => !terminal.has(b.state)) ?? false;
  useEffect(() => {
    if (!running) return;
    const t = setTimeout(batches.reload, 3000);
    return () => clearTimeout(t);
  }, [data, running, batches.reload]);

  return (
    <section aria-labelledby="batches-title">
      <h1 id="batches-title">Batch jobs</h1>
      <p class="meta">
        {running ? "Refreshing every 3 seconds while a batch is in progress. " : ""}
        <button type="button" class="link" onClick={batches.reload}>
          Refresh now
        </button>
      </p>
      <Show value={batches} what="batch jobs">
        {(list) =>
          list.length === 0 ? (
            <Empty>No batch jobs. Create them with POST /v1/batch-jobs and upload their input.</Empty>
          ) : (
            <div class="table-wrap">
              <table class="batches">
                <caption class="visually-hidden">Batch jobs, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">State</th>
                    <th scope="col">Progress</th>
                    <th scope="col">Policy</th>
                    <th scope="col">Updated</th>
                    <th scope="col">Output</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((b) => (
                    <BatchRow key={b.batchJobId} batch={b} onChanged={batches.reload} />
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </Show>
    </section>
  );
}

function BatchRow({ batch: b, onChanged }: { batch: Batch; onChanged: () => void }) {
  const state = enumName(b.state, "BATCH_JOB_STATE_");
  const done = b.processedCount + b.failedCount;
  const download = safeHref(b.outputFileUrl);
  const cancel = useAction(async () => {
    await must(api.POST("/v1/batch-jobs/{batchJobId}/cancel", { params: { path: { batchJobId: b.batchJobId } }, body: {} }));
    onChanged();
  });
  return (
    <tr data-batch={b.batchJobId} data-state={b.state}>
      <td data-label="Name">
        {b.name || <span class="meta">(unnamed)</span>}
        <div class="mono meta">{shortId(b.batchJobId)}</div>
      </td>
      <td data-label="State">
        <span class={`badge batch-${state.toLowerCase()}`}>{state}</span>
        {b.error && (
          <div class="note error">
            <code>{b.error.errorCode}</code> {b.error.errorMessage}
          </div>
        )}
      </td>
      <td data-label="Progress">
        <progress max={Math.max(1, b.itemCount)} value={done} aria-label={`${done} of ${b.itemCount} items`} />
        <div class="meta">
          {b.processedCount} done, {b.failedCount} failed, of {b.itemCount}
        </div>
      </td>
      <td data-label="Policy" class="mono">
        <a href={href(["policies", b.policyId], { version: b.policyVersionId })}>{shortId(b.policyId)}</a>
      </td>
      <td data-label="Updated">{formatTime(b.updatedAt)}</td>
      <td data-label="Output">
        {download ? (
          <a href={download} download={`${b.batchJobId}.jsonl`} rel="noreferrer">
            Download output
          </a>
        ) : !terminal.has(b.state) ? (
          <button type="button" disabled={cancel.busy} onClick={() => cancel.run()}>
            Cancel
          </button>
        ) : (
          <span class="meta">none</span>
        )}
        <ErrorNote error={cancel.error} />
      </td>
    </tr>
  );
}
