// The official Clavata JavaScript SDK (@clavata/sdk from npm) against a real
// contenteval server, in its own node process: what an SDK user does after
// changing the endpoint. cmd/contenteval/grpc_sdk_js_test.go starts the
// server (SQLite and PostgreSQL), prepares accounts, a policy, a hash list
// and an image server, and runs this file with `node --test`, passing what
// it prepared in the environment.
import { test } from "node:test";
import assert from "node:assert/strict";
import http2 from "node:http2";
import Clavata, { StreamError } from "@clavata/sdk";

const env = (name) => {
  const v = process.env[name];
  assert.ok(v, `${name} is not set: run this through go test ./cmd/contenteval -run TestClavataJSSDK`);
  return v;
};
const server = env("CONTENTEVAL_ADDR");
const restURL = env("CONTENTEVAL_URL");
const policyId = env("CONTENTEVAL_POLICY_ID");
const image = Buffer.from(env("CONTENTEVAL_IMAGE_B64"), "base64");
const imageURL = env("CONTENTEVAL_IMAGE_URL");
const blocked = Buffer.from(env("CONTENTEVAL_BLOCKED_IMAGE_B64"), "base64");
const blockedHash = env("CONTENTEVAL_BLOCKED_IMAGE_HASH");

// gRPC status codes and the SDK's enums (numbers, as ts-proto decodes them).
const CANCELED = 1, NOT_FOUND = 5, RESOURCE_EXHAUSTED = 8, UNAUTHENTICATED = 16;
const PENDING = 1, COMPLETED = 3;
const OUTCOME_TRUE = 2;

const client = (apiKey, options = {}) => new Clavata({ apiKey, server, insecure: true, ...options });
const sdk = client(env("CONTENTEVAL_KEY"));

// The SDK needs contentType set (it encodes the field as given).
const text = (value, metadata = {}) => ({ content: { $case: "text", value }, contentType: "", metadata });

function section(report, name) {
  const s = report.sectionEvaluationReports.find((s) => s.name === name);
  assert.ok(s, `no section ${name}`);
  return s;
}

async function completed(jobUuid) {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const job = await sdk.getJob(jobUuid);
    if (job.status === COMPLETED) return job;
    assert.ok(job.status <= COMPLETED, `job ${jobUuid} ended with status ${job.status}`);
    assert.ok(Date.now() < deadline, `job ${jobUuid} still ${job.status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const created = [];

test("createJob with text, image bytes, image URL and metadata; getJob until complete", async () => {
  const job = await sdk.createJob({
    policyId,
    contentData: [
      text("i will kill you", { ref: "text" }),
      { content: { $case: "image", value: image }, contentType: "", metadata: { ref: "bytes" } },
      { content: { $case: "imageUrl", value: imageURL }, contentType: "", metadata: { ref: "url" } },
    ],
  });
  assert.equal(job.status, PENDING, "the SDK always creates jobs without waiting");
  assert.equal(job.policyId, policyId);
  assert.deepEqual(job.contentData.map((c) => c.metadata.ref), ["text", "bytes", "url"]);
  created.push(job.jobUuid);

  const done = await completed(job.jobUuid);
  assert.equal(done.results.length, 3);
  assert.ok(done.completed instanceof Date);
  const [t, bytes, url] = done.results.map((r) => r.report);
  assert.equal(section(t, "Threat").reviewResult.outcome, OUTCOME_TRUE);
  assert.equal(t.reviewResult.outcome, OUTCOME_TRUE);
  assert.deepEqual(t.contentMetadata, { ref: "text" });
  assert.equal(section(bytes, "Known").reviewResult.outcome, OUTCOME_TRUE, "the image's hash matched");
  assert.equal(section(url, "Known").reviewResult.outcome, OUTCOME_TRUE, "the fetched image's hash matched");
  assert.equal(done.results[1].contentHash, done.results[2].contentHash, "same bytes, same hash");
});

test("listJobs with a status filter and paging", async () => {
  for (const s of ["hello", "buy now"]) {
    const job = await sdk.createJob({ policyId, contentData: [text(s)] });
    created.push(job.jobUuid);
  }
  for (const id of created) await completed(id);
  const query = (status) => ({ status });
  const all = await sdk.listJobs({ query: query(COMPLETED), pageSize: 0, pageToken: "" });
  assert.deepEqual(all.jobs.map((j) => j.jobUuid), [...created].reverse(), "newest first");
  assert.equal(all.nextPageToken, "");

  const paged = [];
  let pageToken = "";
  do {
    const page = await sdk.listJobs({ query: query(COMPLETED), pageSize: 2, pageToken });
    assert.ok(page.jobs.length <= 2);
    paged.push(...page.jobs.map((j) => j.jobUuid));
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  assert.deepEqual(paged, all.jobs.map((j) => j.jobUuid));

  const pending = await sdk.listJobs({ query: query(PENDING), pageSize: 10, pageToken: "" });
  assert.deepEqual(pending.jobs, [], "every job has run");
});

test("evaluate streams the results in order", async () => {
  const texts = ["hello", "i will kill you", "buy now", "good day"];
  const stream = sdk.evaluate({ policyId, contentData: texts.map((s, i) => text(s, { id: String(i) })) });
  const got = [];
  for await (const item of stream) {
    assert.ok(!(item instanceof StreamError), `stream error: ${item.message}`);
    got.push(item);
  }
  assert.deepEqual(got.map((m) => m.metadata.id), ["0", "1", "2", "3"]);
  assert.equal(new Set(got.map((m) => m.jobUuid)).size, 1, "one job");
  assert.equal(got[1].result, "TRUE");
  assert.deepEqual(got[1].matches, ["Threat"]);
  assert.deepEqual(got[0].matches, []);
  assert.equal(got[0].report.policyId, policyId);
});

test("a precheck rejection ends the stream with CANCELED, which the SDK yields as a StreamError", async () => {
  const stream = sdk.evaluate({
    policyId,
    contentData: [text("hello", { id: "0" }), { content: { $case: "image", value: blocked }, contentType: "", metadata: { id: "1" } }],
  });
  const got = [];
  for await (const item of stream) got.push(item);
  assert.equal(got.length, 2);
  assert.equal(got[0].metadata.id, "0");
  assert.ok(got[1] instanceof StreamError, `got ${JSON.stringify(got[1])}`);
  assert.equal(got[1].code, CANCELED);
  assert.ok(!got[1].isTransient(), "not retried");
});

test("the precheck rejection carries the PrecheckFailure detail the SDKs decode", async () => {
  // The JS SDK keeps only the code and message of a status; what the Go SDK
  // decodes is in grpc-status-details-bin, read here from a raw call.
  const req = concat(
    field(1, bytesField(3, blocked)), // content_data[0].image
    field(2, Buffer.from(policyId)), // policy_id
    Buffer.from([0x18, 0x01]), // wait_for_completion: true
  );
  const { trailers, trailersOnly } = await rawCall("/clavata.gateway.v1.GatewayService/CreateJob", req, env("CONTENTEVAL_KEY"));
  assert.equal(trailers["grpc-status"], String(CANCELED));
  assert.ok(trailersOnly, "errors are trailers-only responses (grpc-js retries only those)");
  const st = decode(Buffer.from(trailers["grpc-status-details-bin"], "base64"));
  assert.equal(st[1][0], CANCELED);
  const any = decode(st[3][0]);
  assert.equal(any[1][0].toString(), "type.googleapis.com/clavata.gateway.v1.PrecheckFailure");
  const pf = decode(any[2][0]);
  assert.equal(pf[1][0], 1, "PRECHECK_FAILURE_TYPE_NCMEC");
  assert.equal(decode(pf[3][0])[3][0].toString(), blockedHash, "details is the content hash as a string value");
  assert.equal(pf[1000][0], 1, "PRECHECK_MATCH_CONFIDENCE_EXACT");
});

test("an unauthenticated call is refused", async () => {
  await assert.rejects(client("not-a-key").listJobs({ pageSize: 1, pageToken: "" }), (err) => err.code === UNAUTHENTICATED);
});

test("an unknown job is NOT_FOUND", async () => {
  await assert.rejects(sdk.getJob("no-such-job"), (err) => err.code === NOT_FOUND);
});

test("a rate-limited call is retried by the SDK and succeeds", async () => {
  const limited = client(env("CONTENTEVAL_LIMITED_KEY"));
  const before = await exhausted();
  // The account allows one request per second, burst one: the second call
  // is refused with RESOURCE_EXHAUSTED and retried after the pushback.
  const [a, b] = await Promise.all([limited.listJobs({ pageSize: 1, pageToken: "" }), limited.listJobs({ pageSize: 1, pageToken: "" })]);
  assert.deepEqual(a.jobs, []);
  assert.deepEqual(b.jobs, []);
  assert.ok((await exhausted()) > before, "the server refused a call the SDK then retried");
});

// exhausted reads how many ListJobs calls the server refused for the rate.
async function exhausted() {
  const body = await (await fetch(`${restURL}/metrics`)).text();
  const m = body.match(/^contenteval_grpc_requests_total\{code="ResourceExhausted",method="ListJobs"\} (\d+)$/m);
  return m ? Number(m[1]) : 0;
}

// rawCall makes one unary gRPC call with node's own HTTP/2 client and
// returns the trailers, and whether they came alone (a trailers-only
// response: one HEADERS frame ending the stream).
function rawCall(path, message, key) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${server}`);
    session.on("error", reject);
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    message.copy(frame, 5);
    const req = session.request({
      ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers",
      authorization: `Bearer ${key}`,
    });
    let headers = {};
    let trailersOnly = true;
    req.on("response", (h) => { headers = h; });
    req.on("trailers", (t) => { headers = { ...headers, ...t }; trailersOnly = false; });
    req.on("data", () => { trailersOnly = false; });
    req.on("end", () => { session.close(); resolve({ trailers: headers, trailersOnly }); });
    req.on("error", reject);
    req.end(frame);
  });
}

// A protobuf encoder and decoder just big enough for the call above.
function varint(n) {
  const out = [];
  while (n > 0x7f) { out.push((n & 0x7f) | 0x80); n = Math.floor(n / 128); }
  out.push(n);
  return Buffer.from(out);
}
function field(num, bytes) { return concat(varint(num * 8 + 2), varint(bytes.length), bytes); }
function bytesField(num, bytes) { return field(num, bytes); }
function concat(...parts) { return Buffer.concat(parts); }
function decode(buf) {
  const out = {};
  let i = 0;
  const read = () => { let n = 0, mul = 1, b; do { b = buf[i++]; n += (b & 0x7f) * mul; mul *= 128; } while (b & 0x80); return n; };
  while (i < buf.length) {
    const tag = read(), num = Math.floor(tag / 8), type = tag & 7;
    let v;
    if (type === 0) v = read();
    else if (type === 2) { const len = read(); v = buf.subarray(i, i + len); i += len; }
    else if (type === 1) { v = buf.subarray(i, i + 8); i += 8; }
    else if (type === 5) { v = buf.subarray(i, i + 4); i += 4; }
    else throw new Error(`wire type ${type}`);
    (out[num] ??= []).push(v);
  }
  return out;
}
