// A TypeScript client generated from openapi.yaml with openapi-typescript and
// driven through openapi-fetch, as a user of contenteval writes one. It is
// compiled with tsc --strict --noUncheckedIndexedAccess, so every field the
// contract marks optional must be checked before use and every required one
// can be used as is: there is no cast and no non-null assertion (`!`) here.
// cmd/contenteval/client_ts_test.go generates the types, compiles this file,
// starts a server (SQLite and PostgreSQL) and runs the output with
// `node --test`, passing the server's URL and two API keys in the
// environment.
import { test } from "node:test";
import assert from "node:assert/strict";
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/schema.js";

type Schemas = components["schemas"];
type StatusDetail = Schemas["StatusDetail"];
type PrecheckFailureDetail = Schemas["PrecheckFailureDetail"];

function env(name: string): string {
  const v = process.env[name];
  assert.ok(v, `${name} is not set: run this through go test ./cmd/contenteval -run TestTypeScriptClient`);
  return v;
}

const baseUrl = env("CONTENTEVAL_URL");
const policyFirst = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${env("CONTENTEVAL_POLICY_KEY")}` } });
const labelFirst = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${env("CONTENTEVAL_LABEL_KEY")}` } });

const policyText = `LABEL "Threat": "remove" {
    =("i will kill you")
}
SECTION "Spam": "review" {
    =("buy now")
}
`;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Every kind of detail, told apart by @type without a cast: the union
// narrows on the literal.
function describeDetail(d: StatusDetail | PrecheckFailureDetail): string {
  switch (d["@type"]) {
    case "type.googleapis.com/google.rpc.BadRequest":
      return d.fieldViolations.map((v) => `${v.field}: ${v.description}`).join("; ");
    case "type.googleapis.com/contenteval.CompilationErrors":
      return d.errors.map((e) => `${e.line}:${e.column} ${e.message}`).join("; ");
    case "type.googleapis.com/contenteval.PrecheckFailure":
      return `${d.type} ${d.details.contentHash}`;
  }
}

function fieldViolations(details: (StatusDetail | PrecheckFailureDetail)[] | undefined): string[] {
  const fields: string[] = [];
  for (const d of details ?? []) {
    if (d["@type"] === "type.googleapis.com/google.rpc.BadRequest") {
      fields.push(...d.fieldViolations.map((v) => v.field));
    }
  }
  return fields;
}

// Compile-time checks of the contract's shape: they fail the build (an
// unused @ts-expect-error is an error) if the generated types or the
// compiler flags lose their strictness.
export function contractShape(job: Schemas["Job"], page: Schemas["ListJobsResponse"]): string[] {
  // @ts-expect-error results is optional: a job that is not complete has none.
  const n: number = job.results.length;
  // @ts-expect-error noUncheckedIndexedAccess: an element may be missing.
  const first: Schemas["Job"] = page.jobs[0];
  // Required fields are used as they are.
  const ids: string[] = page.jobs.map((j) => j.jobUuid + j.customerId + j.status + j.created);
  return [String(n), String(first), job.jobUuid, ...ids];
}

let policyId = "";
let syncJobUuid = "";

test("policy: create, read, version", async () => {
  const created = await policyFirst.POST("/v1/policies", { body: { policyKey: "ts-client", text: policyText } });
  assert.ok(created.data, JSON.stringify(created.error));
  const { policy, policyVersion } = created.data;
  policyId = policy.policyId;
  assert.equal(policy.policyKey, "ts-client");
  assert.equal(policy.activeVersionId, policyVersion.policyVersionId);
  assert.equal(policyVersion.sequentialVersion, 1);
  assert.ok(policyVersion.tokenCountsV2.dslTokenCount > 0);

  const got = await policyFirst.GET("/v1/policies/{policyId}", { params: { path: { policyId } } });
  assert.ok(got.data);
  assert.equal(got.data.policy.policyId, policyId);

  const v2 = await policyFirst.POST("/v1/policies/{policyId}/versions", { params: { path: { policyId } }, body: { text: policyText } });
  assert.ok(v2.data);
  assert.equal(v2.data.policyVersion.sequentialVersion, 2);
  const versions = await policyFirst.GET("/v1/policies/{policyId}/versions", { params: { path: { policyId }, query: { pageSize: 1 } } });
  assert.ok(versions.data);
  assert.equal(versions.data.policyVersions.length, 1);
  assert.ok(versions.data.nextPageToken, "a second page");
  const rest = await policyFirst.GET("/v1/policies/{policyId}/versions", {
    params: { path: { policyId }, query: { pageSize: 1, pageToken: versions.data.nextPageToken } },
  });
  assert.ok(rest.data);
  assert.equal(rest.data.policyVersions[0]?.policyVersionId, v2.data.policyVersion.policyVersionId);
});

test("sync job: the results of a waited-for job", async () => {
  const { data, error } = await policyFirst.POST("/v1/jobs", {
    body: {
      policyId,
      waitForCompletion: true,
      contentData: [{ text: "i will kill you, buy now", metadata: { ref: "1" } }],
    },
  });
  assert.ok(data, JSON.stringify(error));
  const job = data.job;
  syncJobUuid = job.jobUuid;
  assert.equal(job.status, "JOB_STATUS_COMPLETED");
  assert.equal(job.policyId, policyId);
  assert.equal(job.jobType, "JOB_TYPE_STANDARD");
  const result = job.results?.[0];
  assert.ok(result, "a complete job has its results");
  const report = result.report;
  assert.ok(report);
  assert.equal(report.result, "OUTCOME_TRUE");
  const names = report.sectionEvaluationReports.filter((s) => s.result === "OUTCOME_TRUE").map((s) => s.name);
  assert.deepEqual(names.sort(), ["Spam", "Threat"]);
  assert.ok((report.labelMatches["Threat"] ?? 0) > 0);
  assert.equal(report.contentMetadata?.["ref"], "1");
});

test("async job: the request needs no waitForCompletion, the job is polled", async () => {
  // The request defaults are optional in the generated types (point 3).
  const { data } = await policyFirst.POST("/v1/jobs", { body: { policyId, contentData: [{ text: "nothing to see" }] } });
  assert.ok(data);
  assert.equal(data.job.status, "JOB_STATUS_PENDING");
  assert.equal(data.job.results, undefined, "a pending job carries no results");
  const jobUuid = data.job.jobUuid;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const got = await policyFirst.GET("/v1/jobs/{jobUuid}", { params: { path: { jobUuid } } });
    assert.ok(got.data);
    if (got.data.job.status === "JOB_STATUS_COMPLETED") {
      assert.equal(got.data.job.results?.[0]?.report?.result, "OUTCOME_FALSE");
      assert.ok(got.data.job.completed);
      break;
    }
    assert.ok(Date.now() < deadline, `job ${jobUuid} is still ${got.data.job.status}`);
    await sleep(20);
  }
});

test("list: completed jobs carry their results", async () => {
  const { data } = await policyFirst.GET("/v1/jobs", {
    params: { query: { pageSize: 100, "query.status": "JOB_STATUS_COMPLETED", "query.policyId": policyId } },
  });
  assert.ok(data);
  assert.ok(data.jobs.length >= 2);
  for (const job of data.jobs) {
    assert.equal(job.status, "JOB_STATUS_COMPLETED");
    assert.ok(job.results && job.results.length === job.contentData.length, `job ${job.jobUuid} lists its results`);
  }
  const listed = data.jobs.find((j) => j.jobUuid === syncJobUuid);
  assert.equal(listed?.results?.[0]?.report?.result, "OUTCOME_TRUE");
});

test("stream: one typed message per line, read as the lines arrive", async () => {
  const { data, response } = await policyFirst.POST("/v1/jobs/stream", {
    body: { policyId, contentData: [{ text: "buy now" }, { text: "hello" }, { image: "bm90IGFuIGltYWdl" }] },
    parseAs: "stream",
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "application/x-ndjson");
  assert.ok(data);
  const messages: Schemas["StreamJobsMessage"][] = [];
  const reader = data.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  for (;;) {
    const { done, value } = await reader.read();
    pending += decoder.decode(value, { stream: !done });
    let nl: number;
    while ((nl = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (line !== "") {
        const message: Schemas["StreamJobsMessage"] = JSON.parse(line);
        messages.push(message);
      }
    }
    if (done) break;
  }
  assert.equal(pending, "", "the last line ends with a newline");
  assert.equal(messages.length, 3);
  const outcomes: string[] = [];
  for (const m of messages) {
    if (m.result) {
      assert.ok(m.result.jobResultId);
      outcomes.push(`${m.result.contentHash.slice(0, 8)} ${m.result.policyEvaluationReport?.result}`);
    } else if (m.error) {
      assert.equal(m.error.code, 1, "a precheck failure");
      const detail = m.error.details?.[0];
      assert.ok(detail);
      assert.match(describeDetail(detail), /^PRECHECK_FAILURE_TYPE_INVALID_IMAGE sha256::/);
      outcomes.push("precheck");
    }
  }
  assert.deepEqual(outcomes.sort(), ["precheck", "sha256:: OUTCOME_FALSE", "sha256:: OUTCOME_TRUE"]);
});

test("label hits: two pages of one hit", async () => {
  const first = await policyFirst.GET("/v1/jobs/{jobUuid}/labels", { params: { path: { jobUuid: syncJobUuid }, query: { pageSize: 1 } } });
  assert.ok(first.data);
  assert.equal(first.data.status, "JOB_STATUS_COMPLETED");
  const [hit] = first.data.labels ?? [];
  assert.ok(hit);
  assert.equal(hit.modality, "MODALITY_TEXT");
  assert.equal(hit.startMs, "0");
  assert.equal(hit.startTimecode, "00:00:00.000");
  const pageToken = first.data.nextPageToken;
  assert.ok(pageToken);
  const second = await policyFirst.GET("/v1/jobs/{jobUuid}/labels", {
    params: { path: { jobUuid: syncJobUuid }, query: { pageSize: 1, pageToken } },
  });
  assert.ok(second.data);
  assert.equal(second.data.labels?.length, 1);
  assert.equal(second.data.nextPageToken, undefined);
  assert.deepEqual([hit.label, second.data.labels?.[0]?.label].sort(), ["Spam", "Threat"]);
});

test("feedback: record and list", async () => {
  const posted = await policyFirst.POST("/v1/jobs/{jobUuid}/feedback", {
    params: { path: { jobUuid: syncJobUuid } },
    body: { label: "Spam", expectedOutcome: "EVALUATION_RESULT_FALSE", comment: "a quote, not spam" },
  });
  assert.ok(posted.data, JSON.stringify(posted.error));
  const a = posted.data.annotation;
  assert.equal(a.actualOutcome, "EVALUATION_RESULT_TRUE");
  assert.equal(a.expectedOutcome, "EVALUATION_RESULT_FALSE");
  assert.ok(a.target.contentHash?.startsWith("sha256::"));
  const listed = await policyFirst.GET("/v1/jobs/{jobUuid}/feedback", { params: { path: { jobUuid: syncJobUuid } } });
  assert.ok(listed.data);
  assert.deepEqual(listed.data.annotations.map((x) => x.id), [a.id]);
});

test("batch: a CSV uploaded as text/csv, the output downloaded", async () => {
  const created = await policyFirst.POST("/v1/batch-jobs", { body: { policyId, name: "ts" } });
  assert.ok(created.data);
  const { batchJobId, inputFileUploadUrl } = created.data;
  assert.ok(inputFileUploadUrl);
  const upload = await fetch(inputFileUploadUrl, {
    method: "PUT",
    headers: { "Content-Type": "text/csv" },
    body: "ref_id,type,content\na,text,buy now\nb,text,hello\n",
  });
  assert.equal(upload.status, 200, await upload.clone().text());
  const deadline = Date.now() + 60_000;
  let outputFileUrl: string | undefined;
  for (;;) {
    const { data } = await policyFirst.GET("/v1/batch-jobs", { params: { query: { batchJobIds: [batchJobId] } } });
    assert.ok(data);
    const [b] = data.batchJobs;
    assert.ok(b);
    assert.notEqual(b.state, "BATCH_JOB_STATE_ERROR", JSON.stringify(b.error));
    if (b.state === "BATCH_JOB_STATE_COMPLETED") {
      assert.equal(b.itemCount, 2);
      outputFileUrl = b.outputFileUrl;
      break;
    }
    assert.ok(Date.now() < deadline, `batch ${batchJobId} is still ${b.state}`);
    await sleep(20);
  }
  assert.ok(outputFileUrl);
  const output = await fetch(outputFileUrl);
  assert.equal(output.status, 200);
  const lines: { refId: string; result?: string }[] = (await output.text()).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => [l.refId, l.result]), [["a", "OUTCOME_TRUE"], ["b", "OUTCOME_FALSE"]]);
});

test("labels: create, version, list, evaluate, hits of the evaluation", async () => {
  const created = await labelFirst.POST("/v1/labels", { body: { name: "ts-threat", description: "threats" } });
  assert.ok(created.data, JSON.stringify(created.error));
  const labelId = created.data.label.labelId;
  assert.deepEqual(created.data.label.tags, []);
  const v = await labelFirst.POST("/v1/labels/{labelId}/versions", { params: { path: { labelId } }, body: { text: '=("kill")' } });
  assert.ok(v.data, JSON.stringify(v.error));
  const labelVersionId = v.data.labelVersion.labelVersionId;
  assert.equal(v.data.labelVersion.sequentialVersion, 1);
  const versions = await labelFirst.GET("/v1/labels/{labelId}/versions", { params: { path: { labelId } } });
  assert.ok(versions.data);
  assert.deepEqual(versions.data.labelVersions.map((x) => x.labelVersionId), [labelVersionId]);
  const labels = await labelFirst.GET("/v1/labels", { params: { query: { page_size: 10 } } });
  assert.ok(labels.data);
  assert.ok(labels.data.labels.some((l) => l.labelId === labelId));

  const ev = await labelFirst.POST("/v1/labels/evaluate", {
    body: { contentData: { text: "i will kill you" }, labelVersionIds: [labelVersionId, "unknown"] },
  });
  assert.ok(ev.data, JSON.stringify(ev.error));
  const [hit, miss] = ev.data.results;
  assert.ok(hit && miss);
  assert.equal(hit.labelVersionId, labelVersionId);
  assert.equal(hit.evaluation?.outcome, "OUTCOME_TRUE");
  assert.ok(miss.error, "an unknown version gets an error string");
  const jobUuid = hit.jobUuid;
  assert.ok(jobUuid);
  const hits = await labelFirst.GET("/v1/jobs/{jobUuid}/labels", { params: { path: { jobUuid } } });
  assert.ok(hits.data);
  assert.equal(hits.data.labels?.[0]?.label, "ts-threat");
});

test("errors: typed details read without casts", async () => {
  const compile = await policyFirst.POST("/v1/policies", { body: { policyKey: "broken", text: 'LABEL "A" {\n  =("a"\n}\nFOO' } });
  assert.equal(compile.response.status, 400);
  assert.ok(compile.error);
  assert.equal(compile.error.code, 3);
  const [detail] = compile.error.details ?? [];
  assert.ok(detail);
  assert.equal(detail["@type"], "type.googleapis.com/contenteval.CompilationErrors");
  assert.match(describeDetail(detail), /^\d+:\d+ /);

  const bad = await policyFirst.POST("/v1/jobs", { body: { policyId, threshold: 2, contentData: [{ text: "x" }] } });
  assert.equal(bad.response.status, 400);
  assert.ok(bad.error);
  assert.deepEqual(fieldViolations(bad.error.details), ["threshold"]);

  const precheck = await policyFirst.POST("/v1/jobs", {
    body: { policyId, waitForCompletion: true, contentData: [{ image: "bm90IGFuIGltYWdl" }] },
  });
  assert.equal(precheck.response.status, 499);
  assert.ok(precheck.error);
  assert.equal(precheck.error.code, 1);
  const [pf] = precheck.error.details ?? [];
  assert.ok(pf);
  assert.match(describeDetail(pf), /^PRECHECK_FAILURE_TYPE_INVALID_IMAGE /);

  const missing = await policyFirst.GET("/v1/jobs/{jobUuid}", { params: { path: { jobUuid: "no-such-job" } } });
  assert.equal(missing.response.status, 404);
  assert.equal(missing.error?.code, 5);
  assert.equal(missing.error?.details, undefined);

  const wrongAccount = await labelFirst.POST("/v1/jobs", { body: { policyId, contentData: [{ text: "x" }] } });
  assert.equal(wrongAccount.response.status, 400);
  assert.equal(wrongAccount.error?.code, 9, "FAILED_PRECONDITION for a label-first account");
});
