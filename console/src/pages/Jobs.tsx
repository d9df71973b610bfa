// Jobs of the account, newest first, with the list endpoint's filters and
// its page tokens. The filters live in the fragment (#/jobs?status=...) so
// a reload keeps them; the page tokens do not (they are bound to the
// filters and expire with them).
import { useEffect, useState } from "preact/hooks";
import { api, must, session, type Job, type Schemas } from "../api";
import { Empty, Show } from "../components/States";
import { OutcomeBadge } from "../components/ReportTree";
import { enumName, formatTime, shortId } from "../format";
import { useLoad } from "../hooks";
import { href, navigate, type Route } from "../router";

const statuses: Schemas["JobStatus"][] = [
  "JOB_STATUS_PENDING",
  "JOB_STATUS_RUNNING",
  "JOB_STATUS_COMPLETED",
  "JOB_STATUS_FAILED",
  "JOB_STATUS_CANCELED",
];
const pageSizes = ["10", "25", "50", "100"];

function isStatus(s: string | null): s is Schemas["JobStatus"] {
  return s !== null && (statuses as string[]).includes(s);
}

// toISO reads a datetime-local value as local time.
function toISO(local: string): string | undefined {
  if (!local) return undefined;
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

export function jobOutcome(j: Job): string | undefined {
  const r = j.results?.[0]?.report?.result;
  if (!j.results || j.results.length <= 1) return r;
  // Several items: TRUE if any is TRUE, else the first's.
  return j.results.some((x) => x.report?.result === "OUTCOME_TRUE") ? "OUTCOME_TRUE" : r;
}

export function Jobs({ route }: { route: Route }) {
  const q = route.query;
  const status = q.get("status");
  const policyId = q.get("policy") ?? "";
  const after = q.get("after") ?? "";
  const before = q.get("before") ?? "";
  const size = pageSizes.includes(q.get("size") ?? "") ? (q.get("size") as string) : "25";
  const filterKey = [status, policyId, after, before, size].join("|");

  // tokens[i] is the token of page i (page 0 has none).
  const [pages, setPages] = useState<{ key: string; tokens: string[] }>({ key: filterKey, tokens: [""] });
  const tokens = pages.key === filterKey ? pages.tokens : [""];
  const token = tokens[tokens.length - 1] ?? "";

  const jobs = useLoad(
    () =>
      must(
        api.GET("/v1/jobs", {
          params: {
            query: {
              pageSize: Number(size),
              ...(isStatus(status) ? { "query.status": status } : {}),
              ...(policyId ? { "query.policyId": policyId } : {}),
              ...(toISO(after) ? { "query.createdTimeRange.start": toISO(after) } : {}),
              ...(toISO(before) ? { "query.createdTimeRange.end": toISO(before) } : {}),
              ...(token ? { pageToken: token } : {}),
            },
          },
        }),
      ),
    [filterKey, token],
  );

  const [form, setForm] = useState({ status: status ?? "", policy: policyId, after, before, size });
  // The fragment can change under the form (back button, a link with a
  // filter): the form follows it.
  useEffect(() => setForm({ status: status ?? "", policy: policyId, after, before, size }), [status, policyId, after, before, size]);
  // Apply with unchanged filters reads the first page again.
  const apply = (e: Event) => {
    e.preventDefault();
    if ([form.status, form.policy, form.after, form.before, form.size].join("|") === filterKey) {
      if (tokens.length > 1) setPages({ key: filterKey, tokens: [""] });
      else jobs.reload();
    }
    navigate(href(["jobs"], form));
  };
  const policyFirst = session.accountType() !== "label-first";

  return (
    <section aria-labelledby="jobs-title">
      <h1 id="jobs-title">Jobs</h1>
      <form class="filters" onSubmit={apply} aria-label="Filter jobs">
        <label>
          Status
          <select value={form.status} onChange={(e) => setForm({ ...form, status: e.currentTarget.value })}>
            <option value="">any</option>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {enumName(s, "JOB_STATUS_").toLowerCase()}
              </option>
            ))}
          </select>
        </label>
        {policyFirst && (
          <label>
            Policy id
            <input type="text" value={form.policy} maxLength={128} onInput={(e) => setForm({ ...form, policy: e.currentTarget.value })} />
          </label>
        )}
        <label>
          Created after
          <input type="datetime-local" value={form.after} onInput={(e) => setForm({ ...form, after: e.currentTarget.value })} />
        </label>
        <label>
          Created before
          <input type="datetime-local" value={form.before} onInput={(e) => setForm({ ...form, before: e.currentTarget.value })} />
        </label>
        <label>
          Per page
          <select value={form.size} onChange={(e) => setForm({ ...form, size: e.currentTarget.value })}>
            {pageSizes.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Apply</button>
        <button
          type="button"
          class="link"
          onClick={() => {
            setForm({ status: "", policy: "", after: "", before: "", size: "25" });
            navigate(href(["jobs"]));
          }}
        >
          Clear
        </button>
      </form>
      <Show value={jobs} what="jobs">
        {(page) => (
          <>
            {page.jobs.length === 0 ? (
              <Empty>{tokens.length > 1 ? "No more jobs." : "No jobs match these filters."}</Empty>
            ) : (
              <JobTable jobs={page.jobs} />
            )}
            <nav class="pager" aria-label="Pages of jobs">
              <button type="button" disabled={tokens.length <= 1} onClick={() => setPages({ key: filterKey, tokens: tokens.slice(0, -1) })}>
                Previous page
              </button>
              <span>Page {tokens.length}</span>
              <button
                type="button"
                disabled={!page.nextPageToken}
                onClick={() => page.nextPageToken && setPages({ key: filterKey, tokens: [...tokens, page.nextPageToken] })}
              >
                Next page
              </button>
            </nav>
          </>
        )}
      </Show>
    </section>
  );
}

// against names what the job was evaluated with: the policy key (or
// label name) its report carries, else the id.
function against(j: Job): string {
  const key = j.results?.find((r) => r.report)?.report?.policyKey;
  if (j.policyId) return `policy ${key || shortId(j.policyId)}`;
  if (j.labelId) return `label ${key || shortId(j.labelId)}`;
  return "";
}

function JobTable({ jobs }: { jobs: readonly Job[] }) {
  return (
    <div class="table-wrap">
      <table class="jobs">
        <caption class="visually-hidden">Jobs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Job</th>
            <th scope="col">Created</th>
            <th scope="col">Status</th>
            <th scope="col">Outcome</th>
            <th scope="col">Against</th>
            <th scope="col">Items</th>
          </tr>
        </thead>
        <tbody>
          {jobs.map((j) => (
            <tr key={j.jobUuid} data-job={j.jobUuid}>
              <td data-label="Job">
                <a href={href(["jobs", j.jobUuid])} class="mono" title={j.jobUuid}>
                  {shortId(j.jobUuid)}
                </a>
              </td>
              <td data-label="Created">{formatTime(j.created)}</td>
              <td data-label="Status">
                <span class={`badge status-${enumName(j.status, "JOB_STATUS_").toLowerCase()}`}>{enumName(j.status, "JOB_STATUS_")}</span>
              </td>
              <td data-label="Outcome">{j.results ? <OutcomeBadge outcome={jobOutcome(j)} /> : j.error ? enumName(j.error.reason, "JOB_ERROR_REASON_") : ""}</td>
              <td data-label="Against">
                {against(j)}
              </td>
              <td data-label="Items">{j.contentData.length}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
