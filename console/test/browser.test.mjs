// The review console in a real headless Chromium against a real server
// (cmd/contenteval/console_browser_test.go starts it and passes its URL,
// three API keys and a captioned video in the environment). Each test is
// what a moderator or a policy author does; every page is photographed
// into CONTENTEVAL_CONSOLE_ARTIFACTS.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { artifacts, baseUrl, call, env, launch, screenshot, watch } from "./harness.mjs";

const policyKey = env("CONTENTEVAL_POLICY_KEY");
const labelKey = env("CONTENTEVAL_LABEL_KEY");
// A reviewer key of the policy-first account.
const reviewerKey = env("CONTENTEVAL_REVIEWER_KEY");
const videoFile = process.env.CONTENTEVAL_VIDEO_FILE ?? "";

// Markup that would run or show as markup if the console ever parsed text
// from the API as HTML. Each sets a different value, to tell which leaked.
const xss = {
  label: `<img src=x onerror="window.__xss='label'">`,
  rule: `<script>window.__xss='rule'</script>`,
  metaKey: `<b id="xss-meta-key">k</b>`,
  metaValue: `<img src=x onerror="window.__xss='meta'">`,
  labelName: `<img src=x onerror="window.__xss='labelname'">Threat`,
  description: `<svg onload="window.__xss='description'">`,
  example: `<img src=x onerror="window.__xss='example'"> see you`,
};

// noMarkup fails when markup from the API ran or became elements on the page.
async function noMarkup(page, where) {
  assert.equal(await page.evaluate(() => window.__xss), undefined, `script ran on ${where}`);
  assert.equal(await page.locator("main img, main script, main svg[onload], #xss-meta-key").count(), 0, `markup became elements on ${where}`);
}

const policyText = `LABEL "Threat": "remove" {
    =("i will kill you")
}
SECTION "Spam": "review" {
    =("buy now")
}
`;
const xssPolicyText = `LABEL "${xss.label.replaceAll('"', "'")}": "remove" {
    =("${xss.rule.replaceAll("'", "")}")
}
`;

const seeded = {};
let browser;

before(async () => {
  browser = await launch();
  const p = await call(policyKey, "POST", "/v1/policies", { policyKey: "console", text: policyText });
  seeded.policyId = p.policy.policyId;
  const text = await call(policyKey, "POST", "/v1/jobs", {
    policyId: seeded.policyId,
    waitForCompletion: true,
    contentData: [{ text: "Hello there. I will kill you, and then buy now!", metadata: { source: "forum", postId: "42" } }],
  });
  assert.equal(text.job.status, "JOB_STATUS_COMPLETED");
  seeded.textJob = text.job.jobUuid;
  const failed = await call(policyKey, "POST", "/v1/jobs", {
    policyId: seeded.policyId,
    waitForCompletion: true,
    contentData: [{ videoUrl: "https://example.invalid/v.mp4" }],
  });
  assert.equal(failed.job.status, "JOB_STATUS_FAILED");
  seeded.failedJob = failed.job.jobUuid;
  if (videoFile) {
    const captions = "WEBVTT\n\n00:00:00.500 --> 00:00:01.500\nhello there\n\n00:00:02.500 --> 00:00:03.500\ni will kill you\n";
    const video = await call(policyKey, "POST", "/v1/jobs", {
      policyId: seeded.policyId,
      waitForCompletion: true,
      contentData: [{ video: readFileSync(videoFile).toString("base64"), captions }],
    });
    assert.equal(video.job.status, "JOB_STATUS_COMPLETED", JSON.stringify(video.job.error));
    seeded.videoJob = video.job.jobUuid;
  }
  const xp = await call(policyKey, "POST", "/v1/policies", { policyKey: "markup", text: xssPolicyText });
  const xj = await call(policyKey, "POST", "/v1/jobs", {
    policyId: xp.policy.policyId,
    waitForCompletion: true,
    contentData: [{ text: `look: ${xss.rule.replaceAll("'", "")} here`, metadata: { [xss.metaKey]: xss.metaValue } }],
  });
  assert.equal(xj.job.status, "JOB_STATUS_COMPLETED");
  seeded.xssPolicy = xp.policy.policyId;
  seeded.xssJob = xj.job.jobUuid;
  console.log(`# screenshots: ${artifacts()}`);
});

after(async () => {
  await browser?.close();
});

async function newPage(width = 1280, height = 900) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const watcher = await watch(page);
  return { context, page, watcher };
}

// until polls a condition of the server (through its API) until it holds:
// the console shows what the server has, so a test first waits for the
// server, then reads the page.
async function until(what, cond, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// untilTexts waits for the texts of locator's elements to be want: a view
// that renders twice (the examples' texts come after the results) may
// replace the elements a waitFor saw.
async function untilTexts(locator, want, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await locator.allTextContents();
    if (JSON.stringify(got) === JSON.stringify(want)) return;
    assert.ok(Date.now() < deadline, `timed out waiting for the texts ${JSON.stringify(want)}; last seen ${JSON.stringify(got)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// ratio is the console's rendering of a precision, recall or F1.
const ratio = (v) => (v === undefined ? "–" : `${(v * 100).toFixed(1)}%`);

async function signIn(page, key) {
  await page.goto(`${baseUrl()}/console/`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("nav[aria-label=Main]").waitFor();
}

test("serving: the page and its files carry a strict CSP and no cookies", async () => {
  const r = await fetch(`${baseUrl()}/console/`);
  assert.equal(r.status, 200);
  const csp = r.headers.get("content-security-policy") ?? "";
  for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) {
    assert.ok(csp.includes(d), `CSP lacks ${d}: ${csp}`);
  }
  assert.ok(!/unsafe-inline|unsafe-eval/.test(csp), csp);
  assert.equal(r.headers.get("set-cookie"), null);
  const html = await r.text();
  assert.ok(!/<script(?![^>]*\bsrc=)[^>]*>/i.test(html), "index.html has an inline script");
  assert.ok(!/\sstyle=/i.test(html), "index.html has an inline style");
  const js = await fetch(`${baseUrl()}/console/app.js`, { headers: { "Accept-Encoding": "gzip" } });
  assert.equal(js.status, 200);
  assert.match(js.headers.get("content-type") ?? "", /javascript/);
  assert.equal((await fetch(`${baseUrl()}/console/nope.js`)).status, 404);
});

test("sign in, find a job by its policy, read its highlighted span, give feedback and see it listed", async () => {
  const { context, page, watcher } = await newPage();
  await page.goto(`${baseUrl()}/console/`);
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  await screenshot(page, "sign-in");
  // A wrong key is refused on the page.
  await page.getByLabel("API key").fill("not-a-key");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator(".note.error").waitFor();
  await signIn(page, policyKey);

  // No cookie anywhere; the key is in this tab's sessionStorage.
  assert.deepEqual(await context.cookies(), []);
  assert.equal(await page.evaluate(() => document.cookie), "");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("contenteval.apiKey")), policyKey);

  await page.locator("table.jobs").waitFor();
  await screenshot(page, "jobs");
  await page.getByLabel("Policy id").fill(seeded.policyId);
  await page.getByLabel("Status").selectOption("JOB_STATUS_COMPLETED");
  await page.getByRole("button", { name: "Apply" }).click();
  // The filter keeps the completed jobs of the policy (not the failed one).
  const want = seeded.videoJob ? 2 : 1;
  await page.waitForFunction((n) => location.hash.includes("policy=") && document.querySelectorAll("tr[data-job]").length === n, want);
  const row = page.locator(`tr[data-job="${seeded.textJob}"]`);
  await row.getByRole("link").click();

  await page.locator(`article.job[data-job="${seeded.textJob}"]`).waitFor();
  await untilTexts(page.locator(".flagged mark"), ["I will kill you", "buy now"]);
  assert.equal(await page.locator(".flagged mark").first().getAttribute("data-start"), "13");
  // The report tree: the rule's text and score under its section.
  const threat = page.locator('details.section[data-section="Threat"]');
  assert.equal(await threat.getAttribute("open"), "");
  assert.match(await threat.locator("code.rule-text").first().textContent(), /i will kill you/);
  assert.match(await page.locator("table.metadata").first().textContent(), /postId\s*42/);

  await threat.getByRole("button", { name: "Threat was right (TRUE)" }).click();
  await threat.locator(".saved").waitFor();
  const fb = page.locator("table.feedback-list tbody tr");
  await fb.first().waitFor();
  assert.match(await fb.first().textContent(), /Threat.*TRUE.*TRUE/);
  await screenshot(page, "job-text");
  await watcher.assertClean();
  await context.close();
});

test("a video job: the timeline marker at the hit's time, its bounds, feedback on the occurrence", { skip: !videoFile && "no CONTENTEVAL_VIDEO_FILE" }, async () => {
  const { context, page, watcher } = await newPage();
  await signIn(page, policyKey);
  await page.goto(`${baseUrl()}/console/#/jobs/${seeded.videoJob}`);
  const marker = page.locator('svg rect.marker[data-start-ms="2500"]');
  await marker.waitFor();
  assert.equal(await marker.getAttribute("aria-label"), "Threat at 00:00:02.500–00:00:03.500");
  const end = Number(await page.locator(".timeline svg").getAttribute("data-end-ms"));
  assert.equal(await marker.getAttribute("x"), `${((2500 / end) * 100).toFixed(3)}%`);
  // The marker's box sits where 2.5 s falls on the drawn axis.
  const box = await marker.boundingBox();
  const svg = await page.locator(".timeline svg").boundingBox();
  assert.ok(Math.abs(box.x - (svg.x + (svg.width * 2500) / end)) < 2, `marker at ${box.x}, svg ${svg.x}+${svg.width}`);

  await marker.click();
  const detail = page.locator(".hit-detail");
  await detail.waitFor();
  assert.match(await detail.textContent(), /Frame segment\s*00:00:02\.000–00:00:04\.000/);
  assert.match(await detail.textContent(), /Transcript chunk\s*00:00:02\.500–00:00:03\.500/);
  assert.deepEqual(await detail.locator("mark").allTextContents(), ["i will kill you"]);
  await detail.getByRole("button", { name: "Threat at 00:00:02.500 was wrong (should be FALSE)" }).click();
  await detail.locator(".saved").waitFor();
  await page.locator("table.feedback-list tbody tr", { hasText: "VIDEO 00:00:02.500–00:00:03.500" }).waitFor();
  assert.match(await page.locator("table.feedback-list tbody tr").first().textContent(), /Threat.*VIDEO 00:00:02\.500–00:00:03\.500.*FALSE/);
  await screenshot(page, "job-video");
  // By keyboard: the hit's row button selects it and the panel takes the focus.
  await detail.getByRole("button", { name: "Close" }).click();
  await page.getByRole("button", { name: "Select Threat at 00:00:02.500–00:00:03.500" }).focus();
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => document.activeElement?.classList.contains("hit-detail"));
  await watcher.assertClean();
  await context.close();
});

test("jobs: pages of 10 through the page tokens, and the error state of an unknown job", async () => {
  for (let i = 0; i < 10; i++) {
    await call(policyKey, "POST", "/v1/jobs", { policyId: seeded.policyId, contentData: [{ text: `filler ${i}` }] });
  }
  const { context, page, watcher } = await newPage();
  await signIn(page, policyKey);
  await page.getByLabel("Per page").selectOption("10");
  await page.getByRole("button", { name: "Apply" }).click();
  await page.waitForFunction(() => location.hash.includes("size=10") && document.querySelectorAll("tr[data-job]").length === 10);
  const first = await page.locator("tr[data-job]").first().getAttribute("data-job");
  await page.getByRole("button", { name: "Next page" }).click();
  await page.getByText("Page 2").waitFor();
  await page.waitForFunction((f) => document.querySelectorAll("tr[data-job]").length > 0 && !document.querySelector(`tr[data-job="${f}"]`), first);
  const second = await page.locator("tr[data-job]").allTextContents();
  assert.ok(second.length >= 4, `page 2 has ${second.length} jobs`);
  await page.getByRole("button", { name: "Previous page" }).click();
  await page.locator(`tr[data-job="${first}"]`).waitFor();

  await page.goto(`${baseUrl()}/console/#/jobs/no-such-job`);
  await page.locator('[data-state="not-found"]').waitFor();
  assert.match(await page.locator('[data-state="not-found"]').textContent(), /No such job/);
  await screenshot(page, "job-not-found");
  await watcher.assertClean();
  await context.close();
});

test("states: loading, error with a retry, empty, and a refused key back to sign-in", async () => {
  const { context, page, watcher } = await newPage();
  await signIn(page, policyKey);
  // Loading: the batch list is held until the page has shown its state.
  let release;
  const held = new Promise((r) => (release = r));
  await page.route("**/v1/batch-jobs*", async (route) => {
    await held;
    await route.continue();
  });
  await page.goto(`${baseUrl()}/console/#/batches`);
  await page.locator('[data-state="loading"]').waitFor();
  await screenshot(page, "state-loading");
  release();
  await page.locator('[data-state="loading"]').waitFor({ state: "detached" });
  await page.unroute("**/v1/batch-jobs*");

  // Error: the server is unavailable once; Try again reads it again.
  await page.route("**/v1/policies?*", (route) =>
    route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ code: 14, message: "database is not reachable" }) }),
  );
  await page.goto(`${baseUrl()}/console/#/policies`);
  const error = page.locator('[data-state="error"]');
  await error.waitFor();
  assert.match(await error.textContent(), /Could not load policies.*database is not reachable/);
  await screenshot(page, "state-error");
  await page.unroute("**/v1/policies?*");
  await error.getByRole("button", { name: "Try again" }).click();
  await page.locator("table.policies").waitFor();

  // Empty: a filter nothing matches.
  await page.goto(`${baseUrl()}/console/#/jobs?policy=no-such-policy`);
  await page.locator('[data-state="empty"]', { hasText: "No jobs match these filters." }).waitFor();
  await screenshot(page, "state-empty");

  // A key the server stops accepting ends the session.
  await page.route("**/v1/jobs?*", (route) =>
    route.fulfill({ status: 401, contentType: "application/json", body: JSON.stringify({ code: 16, message: "the API key was revoked" }) }),
  );
  await page.getByLabel("Per page").selectOption("50");
  await page.getByRole("button", { name: "Apply" }).click();
  await page.getByRole("heading", { name: "Sign in" }).waitFor();
  assert.match(await page.locator(".signin .note").textContent(), /refused the API key/);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("contenteval.apiKey")), null);
  await watcher.assertClean();
  await context.close();
});

test("a failed job shows its JobError", async () => {
  const { context, page, watcher } = await newPage();
  await signIn(page, policyKey);
  await page.goto(`${baseUrl()}/console/#/jobs/${seeded.failedJob}`);
  const box = page.locator('.job-error[data-reason="JOB_ERROR_REASON_VIDEO_SOURCE_UNREACHABLE"]');
  await box.waitFor();
  assert.match(await box.textContent(), /The job failed/);
  await screenshot(page, "job-failed");
  await watcher.assertClean();
  await context.close();
});

test("policies: versions, the editor's live check, a new active version; batch jobs; other pages are forbidden", async () => {
  const { context, page, watcher } = await newPage();
  await signIn(page, policyKey);
  await page.getByRole("link", { name: "Policies" }).click();
  await page.locator("table.policies").waitFor();
  await screenshot(page, "policies");
  await page.getByRole("link", { name: "console", exact: true }).click();
  await page.locator("pre.rules").waitFor();
  const editor = page.getByLabel("Policy", { exact: true });
  await editor.fill(`LABEL "Threat": "remove" {\n    =("i will kill you"\n}\n`);
  await page.locator('.check-errors li[data-line="3"]').waitFor();
  assert.equal(await page.locator('.gutter .ln.err[data-line="3"]').count(), 1);
  await screenshot(page, "policy-error");
  const v2Text = `${policyText}SECTION "Scam": "review" {\n    =("wire the money")\n}\n`;
  await editor.fill(v2Text);
  await page.locator('.check-status[data-check="ok"]').waitFor();
  await page.getByRole("button", { name: "Publish and activate" }).click();
  await page.locator("tr", { hasText: "v2" }).locator(".badge.active").waitFor();
  await screenshot(page, "policy");

  // The first version's live metrics, as the API gives them (the text job was evaluated with it).
  const versions = (await call(policyKey, "GET", `/v1/policies/${seeded.policyId}/versions`)).policyVersions;
  const v1 = versions.find((v) => v.sequentialVersion === 1).policyVersionId;
  const apiMetrics = (await call(policyKey, "GET", `/v1/policies/${seeded.policyId}/versions/${v1}/metrics`)).metrics;
  const threatMetrics = apiMetrics.find((m) => m.label === "Threat");
  assert.ok(threatMetrics.evaluations >= 1, JSON.stringify(apiMetrics));
  await page.locator("tr", { hasText: "v1" }).getByRole("link", { name: "v1" }).click();
  // (the active version's table may still be on screen: wait for v1's)
  const metricsRow = page.locator(`table.metrics[data-version-id="${v1}"] tr[data-metric-label="Threat"]`);
  await metricsRow.waitFor();
  assert.equal(await metricsRow.locator('td[data-label="Evaluations"]').textContent(), String(threatMetrics.evaluations));
  assert.equal(await metricsRow.locator('td[data-label="Annotations"]').textContent(), String(threatMetrics.annotations));
  assert.equal(await metricsRow.locator('[data-metric="precision"]').textContent(), ratio(threatMetrics.precision));
  await screenshot(page, "policy-metrics");

  // A batch: state, progress and the output link once complete.
  const b = await call(policyKey, "POST", "/v1/batch-jobs", { policyId: seeded.policyId, name: "console batch" });
  const up = await fetch(b.inputFileUploadUrl, { method: "PUT", headers: { "Content-Type": "text/csv" }, body: "ref_id,type,content\na,text,buy now\nb,text,hello\n" });
  assert.equal(up.status, 200);
  await page.getByRole("link", { name: "Batch jobs" }).click();
  const batchRow = page.locator(`tr[data-batch="${b.batchJobId}"][data-state="BATCH_JOB_STATE_COMPLETED"]`);
  await batchRow.waitFor({ timeout: 60_000 });
  assert.match(await batchRow.textContent(), /2 done, 0 failed, of 2/);
  const link = batchRow.getByRole("link", { name: "Download output" });
  const out = await fetch(await link.getAttribute("href"));
  assert.equal(out.status, 200);
  assert.equal((await out.text()).trim().split("\n").length, 2);
  await screenshot(page, "batches");

  // A shadow version: published from the editor, it evaluates a live job after its result;
  // its stats and the disagreement show, and Activate makes it the active version.
  await page.goto(`${baseUrl()}/console/#/policies/${seeded.policyId}`);
  await page.locator("pre.rules").waitFor();
  await editor.fill(v2Text.replace(`=("i will kill you")\n`, `=("i will kill you")\n    =("i will end you")\n`));
  await page.locator('.check-status[data-check="ok"]').waitFor();
  await page.getByLabel(/shadow: evaluated on live jobs/).check();
  await page.getByLabel("Share of live jobs (0 to 1)").fill("1");
  await page.getByRole("button", { name: "Publish as shadow" }).click();
  const v3Row = page.locator("tr", { hasText: "v3" });
  await v3Row.locator(".badge.shadow").waitFor();
  const live = await call(policyKey, "POST", "/v1/jobs", { policyId: seeded.policyId, waitForCompletion: true, contentData: [{ text: "i will end you" }] });
  const v3 = (await call(policyKey, "GET", `/v1/policies/${seeded.policyId}`)).policy.shadowVersionId;
  assert.ok(v3);
  await until("the shadow evaluation", async () => (await call(policyKey, "GET", `/v1/policies/${seeded.policyId}/versions/${v3}/shadow-stats`)).evaluated === 1);
  await page.locator(".shadow").getByRole("button", { name: "Refresh" }).click();
  await page.locator('.shadow-summary[data-evaluated="1"]').waitFor();
  assert.match(await page.locator(".shadow-summary").textContent(), /1 live results evaluated: 0 agreed on every label, 1 did not/);
  assert.match(await page.locator('table.shadow-labels tr[data-shadow-label="Threat"]').textContent(), /Threat\s*0\s*1\s*0/);
  const disagreement = page.locator(`table.disagreements tr[data-job="${live.job.jobUuid}"]`);
  assert.match(await disagreement.textContent(), /Threat\s*FALSE\s*TRUE/);
  // The shadow's live metrics count its evaluation of the live job.
  const v3Metrics = (await call(policyKey, "GET", `/v1/policies/${seeded.policyId}/versions/${v3}/metrics`)).metrics.find((m) => m.label === "Threat");
  assert.equal(v3Metrics.evaluations, 1);
  await page.locator(".live-metrics").getByRole("button", { name: "Refresh" }).click();
  await page.locator('table.metrics tr[data-metric-label="Threat"] td[data-label="Evaluations"]', { hasText: "1" }).waitFor();
  await screenshot(page, "policy-shadow");
  await disagreement.getByRole("link").click();
  await page.locator(`article.job[data-job="${live.job.jobUuid}"]`).waitFor();
  await page.goBack();
  await page.getByRole("button", { name: "Activate v3" }).click();
  await v3Row.locator(".badge.active").waitFor();
  const activated = (await call(policyKey, "GET", `/v1/policies/${seeded.policyId}`)).policy;
  assert.equal(activated.activeVersionId, v3);
  assert.equal(activated.shadowVersionId, undefined);

  // A label-first page with a policy-first key: the forbidden state.
  await page.goto(`${baseUrl()}/console/#/labels`);
  await page.locator('[data-state="forbidden"]').waitFor();
  await screenshot(page, "forbidden");
  await watcher.assertClean();
  await context.close();
});

test("labels: a version with an error shown at its line, fixed, published and tried; examples, dataset runs, compare, metrics", async () => {
  const { context, page, watcher } = await newPage();
  await signIn(page, labelKey);
  await page.getByRole("link", { name: "Labels" }).click();
  await page.locator('[data-state="empty"]').waitFor();
  await page.getByRole("button", { name: "New label" }).click();
  await page.getByLabel("Name").fill(xss.labelName);
  await page.getByLabel("Description").fill(xss.description);
  await page.getByRole("button", { name: "Create label" }).click();

  const editor = page.getByLabel("Rules");
  await editor.waitFor();
  await editor.fill(`=("i will kill you")\nFOO("buy now")\n`);
  const err = page.locator(".check-errors li").first();
  await err.waitFor();
  assert.equal(await err.getAttribute("data-line"), "2");
  assert.equal(await page.locator('.gutter .ln.err[data-line="2"]').count(), 1);
  await screenshot(page, "label-editor-error");
  // The error's button puts the caret on its line.
  await err.getByRole("button").click();
  const caret = await editor.evaluate((t) => t.value.slice(0, t.selectionStart).split("\n").length);
  assert.equal(caret, 2);

  await editor.fill(`=("i will kill you")\n=("${xss.rule.replaceAll("'", "")}")\n`);
  await page.locator('.check-status[data-check="ok"]').waitFor();
  await page.getByRole("button", { name: "Publish version" }).click();
  await page.locator("[data-created-version]").waitFor();
  await screenshot(page, "label-editor-ok");

  await page.getByRole("link", { name: "try it", exact: true }).click();
  await page.getByLabel("Text").fill("well, i will kill you");
  await page.getByRole("button", { name: "Evaluate" }).click();
  await page.locator(".try-result mark").waitFor();
  assert.deepEqual(await page.locator(".try-result mark").allTextContents(), ["i will kill you"]);
  await screenshot(page, "label-try");

  await page.getByRole("link", { name: "Versions" }).click();
  await page.locator("pre.rules").waitFor();
  assert.match(await page.locator("pre.rules").textContent(), /<script>/);
  await screenshot(page, "label-versions");

  // Examples with known outcomes under v1: 2 TP, 1 FP, 2 FN, 2 TN (one of them markup).
  const tabs = page.locator("nav.tabs");
  await tabs.getByRole("link", { name: "Examples" }).click();
  const lines = [
    "TRUE well, i will kill you",
    "TRUE i will kill you now",
    "TRUE you are dead to me",
    "TRUE i shall end you",
    "FALSE i will kill you at chess",
    "FALSE have a nice day",
    `FALSE ${xss.example}`,
  ];
  await page.getByLabel(/^Examples, one per line/).fill(["not an example", ...lines].join("\n"));
  await page.locator(".parse-errors", { hasText: "line 1: start with TRUE or FALSE" }).waitFor();
  await page.getByLabel(/^Examples, one per line/).fill(lines.join("\n"));
  await page.getByRole("button", { name: "Add 7 examples" }).click();
  await page.locator('[data-added="7"]').waitFor();
  await page.locator("table.examples tbody tr").nth(6).waitFor();
  assert.ok((await page.locator("table.examples").textContent()).includes(xss.example));
  await noMarkup(page, "the examples page");
  await screenshot(page, "label-examples");

  await tabs.getByRole("link", { name: "Dataset runs" }).click();
  await page.getByRole("button", { name: "Run on the dataset" }).click();
  const done = page.locator('table.runs tbody tr[data-state="DATASET_RUN_STATE_COMPLETED"]');
  await done.first().waitFor({ timeout: 60_000 });
  // precision 2/3, recall 2/4, F1 4/7, accuracy 4/7
  assert.equal(await done.first().locator('[data-metric="precision"]').textContent(), "66.7%");
  assert.equal(await done.first().locator('[data-metric="recall"]').textContent(), "50.0%");
  assert.equal(await done.first().locator('[data-metric="f1"]').textContent(), "57.1%");
  assert.equal(await done.first().locator('[data-metric="accuracy"]').textContent(), "57.1%");
  await screenshot(page, "label-dataset-runs");
  await done.first().getByRole("link").first().click();
  // The examples' texts are read after the results: wait for the mark they bring.
  await untilTexts(page.locator('.result[data-kind="fp"] > .flagged-text mark'), ["i will kill you"]);
  // The list may be drawn again meanwhile (empty for an instant): wait for it.
  const kinds = async () => (await page.locator(".result").evaluateAll((els) => els.map((e) => e.dataset.kind))).sort().join(",");
  await until("the run's wrong results: fn, fn, fp", async () => (await kinds()) === "fn,fn,fp");
  await screenshot(page, "label-run-results");
  await page.getByLabel(/Only the examples it got wrong/).uncheck();
  await page.locator(".result").nth(6).waitFor();
  assert.ok((await page.locator("ul.results").textContent()).includes(xss.example));
  await noMarkup(page, "the run's results");

  // A second version catches "you are dead": its run, compared with the first, lists
  // exactly that example, fixed.
  const labelId = await page.locator("article.label").getAttribute("data-label-id");
  await call(labelKey, "POST", `/v1/labels/${labelId}/versions`, { text: `=("i will kill you")\n=("you are dead")\n` });
  await page.goto(`${baseUrl()}/console/#/labels/${labelId}?tab=runs`);
  await page.reload();
  await page.getByRole("button", { name: "Run on the dataset" }).click();
  await page.locator('table.runs tbody tr[data-state="DATASET_RUN_STATE_COMPLETED"]').nth(1).waitFor({ timeout: 60_000 });
  const newest = page.locator("table.runs tbody tr").first();
  assert.match(await newest.locator('td[data-label="Version"]').textContent(), /^v2$/);
  assert.equal(await newest.locator('[data-metric="recall"]').textContent(), "75.0%");
  await newest.locator('td[data-label="Compare"] a').click();
  await page.locator("table.changes").waitFor();
  const changes = page.locator("table.changes tbody tr");
  assert.equal(await changes.count(), 1);
  assert.equal(await changes.first().getAttribute("data-effect"), "fixed");
  // The example's text arrives after the table (it is read separately): wait for it.
  await changes.first().filter({ hasText: /you are dead to me/ }).waitFor({ timeout: 30_000 });
  assert.match(await page.locator('table.compare-figures tr[data-figure="recall"]').textContent(), /50\.0%\s*75\.0%\s*\+25\.0 pt/);
  await screenshot(page, "label-compare");

  // Live metrics of v1: the evaluation made in "Try it" above.
  const lv = (await call(labelKey, "GET", `/v1/labels/${labelId}/versions`)).labelVersions;
  const lv1 = lv.find((v) => v.sequentialVersion === 1).labelVersionId;
  const lm = (await call(labelKey, "GET", `/v1/labels/${labelId}/versions/${lv1}/metrics`)).metrics[0];
  assert.equal(lm.evaluations, 1);
  await tabs.getByRole("link", { name: "Live metrics" }).click();
  await page.getByLabel("Version").selectOption(lv1);
  // (the label's name carries markup and quotes: the row is found by position)
  // (the table of the version shown first stays until v1's figures arrive)
  const lrow = page.locator(`table.metrics[data-version-id="${lv1}"] tbody tr`).first();
  await lrow.waitFor();
  assert.equal(await lrow.locator('td[data-label="Evaluations"]').textContent(), "1");
  await screenshot(page, "label-metrics");
  await watcher.assertClean();
  await context.close();
});

test("markup in content, label names, metadata and rule texts is shown as text everywhere", async () => {
  const { context, page, watcher } = await newPage();
  const leaked = (where) => noMarkup(page, where);
  await signIn(page, policyKey);
  await page.goto(`${baseUrl()}/console/#/jobs/${seeded.xssJob}`);
  await page.locator("article.job details.section").first().waitFor();
  const body = await page.locator("main").textContent();
  for (const s of [xss.label.replaceAll('"', "'"), xss.rule.replaceAll("'", ""), xss.metaKey, xss.metaValue]) {
    assert.ok(body.includes(s), `${s} is not shown as text`);
  }
  // The mark is the span the server flagged (its matcher leaves out the
  // outer "<" and ">"), as text.
  const marked = await page.locator(".flagged mark").allTextContents();
  assert.equal(marked.length, 1);
  assert.ok(xss.rule.replaceAll("'", "").includes(marked[0]) && marked[0].includes("</script"), marked[0]);
  await leaked("the job page");
  await screenshot(page, "xss-job");
  await page.goto(`${baseUrl()}/console/#/policies/${seeded.xssPolicy}`);
  await page.locator("pre.rules").waitFor();
  assert.ok((await page.locator("pre.rules").textContent()).includes(xss.rule.replaceAll("'", "")));
  await leaked("the policy page");

  await page.getByRole("button", { name: "Sign out" }).click();
  await signIn(page, labelKey);
  await page.getByRole("link", { name: "Labels" }).click();
  await page.locator("table.labels").waitFor();
  await screenshot(page, "labels");
  assert.ok((await page.locator("table.labels").textContent()).includes(xss.labelName));
  await leaked("the labels page");
  await page.locator("table.labels a").first().click();
  await page.locator(".label-name").waitFor();
  assert.equal(await page.locator(".label-name").textContent(), xss.labelName);
  assert.ok((await page.locator("main").textContent()).includes(xss.description));
  await leaked("the label page");
  await screenshot(page, "xss-label");
  // The label-first account's evaluation job: its report names the label.
  await page.getByRole("link", { name: "Jobs" }).click();
  await page.locator("table.jobs a").first().click();
  await page.locator("article.job details.section").first().waitFor();
  await leaked("the label job page");
  await watcher.assertClean();
  await context.close();
});

test("keyboard: skip link, then tab to a job and open it with Enter", async () => {
  const { context, page, watcher } = await newPage();
  await signIn(page, policyKey);
  await page.goto(`${baseUrl()}/console/#/jobs`);
  await page.reload();
  await page.locator("table.jobs").waitFor();
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Skip to content");
  let found = false;
  for (let i = 0; i < 40 && !found; i++) {
    await page.keyboard.press("Tab");
    found = await page.evaluate(() => document.activeElement?.matches('table.jobs a[href^="#/jobs/"]') ?? false);
  }
  assert.ok(found, "no job link within 40 tab stops");
  const target = await page.evaluate(() => document.activeElement.getAttribute("href"));
  await page.keyboard.press("Enter");
  await page.locator("article.job").waitFor();
  assert.equal(await page.evaluate(() => location.hash), target);
  // The new page's content has the focus.
  assert.equal(await page.evaluate(() => document.activeElement?.id), "main");
  // The report folds with the keyboard, on a job known to have one: the
  // first job of the list may be the failed one, which has none (the test
  // clock creates every job at one instant, and the ids order them).
  await page.goto(`${baseUrl()}/console/#/jobs/${seeded.textJob}`);
  await page.locator("article.job details.section").first().waitFor();
  await page.locator("details.section summary").first().focus();
  const wasOpen = await page.locator("details.section").first().evaluate((d) => d.open);
  await page.keyboard.press("Enter");
  assert.equal(await page.locator("details.section").first().evaluate((d) => d.open), !wasOpen);
  await watcher.assertClean();
  await context.close();
});

async function fits(page, name, hash, ready) {
  await page.goto(`${baseUrl()}/console/${hash}`);
  await page.locator(ready).first().waitFor();
  await screenshot(page, `390-${name}`);
  const overflow = await page.evaluate(() => {
    const wide = [...document.querySelectorAll("main *")].filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5);
    return { by: document.documentElement.scrollWidth - document.documentElement.clientWidth, what: wide.slice(0, 3).map((e) => `${e.tagName}.${e.className}`) };
  });
  assert.ok(overflow.by <= 0, `${name} is ${overflow.by}px wider than the screen: ${overflow.what.join(", ")}`);
}

test("390 px: the pages fit the width of a phone", async () => {
  const { context, page, watcher } = await newPage(390, 844);
  await signIn(page, policyKey);
  for (const [name, hash, ready] of [
    ["jobs", "#/jobs", "table.jobs"],
    ["job-text", `#/jobs/${seeded.textJob}`, "details.section"],
    ...(seeded.videoJob ? [["job-video", `#/jobs/${seeded.videoJob}`, "svg rect.marker"]] : []),
    ["policies", "#/policies", "table.policies"],
    ["batches", "#/batches", "main h1"],
    ["policy", `#/policies/${seeded.policyId}`, "table.metrics"],
  ]) {
    await fits(page, name, hash, ready);
  }
  // The label-first pages, with the label, runs and comparison the labels test made.
  await page.getByRole("button", { name: "Sign out" }).click();
  await signIn(page, labelKey);
  const labels = (await call(labelKey, "GET", "/v1/labels")).labels;
  const withRuns = [];
  for (const l of labels) {
    const runs = (await call(labelKey, "GET", `/v1/labels/${l.labelId}/dataset-runs`)).datasetRuns;
    if (runs.length >= 2) withRuns.push([l.labelId, runs]);
  }
  assert.equal(withRuns.length, 1, "the labels test made one label with two runs");
  const [labelId, [newer, older]] = withRuns[0];
  for (const [name, hash, ready] of [
    ["labels", "#/labels", "table.labels"],
    ["label-examples", `#/labels/${labelId}?tab=examples`, "table.examples"],
    ["label-runs", `#/labels/${labelId}?tab=runs`, "table.runs"],
    ["label-run", `#/labels/${labelId}?tab=runs&run=${older.datasetRunId}`, ".result"],
    ["label-compare", `#/labels/${labelId}?tab=runs&run=${newer.datasetRunId}&base=${older.datasetRunId}`, "table.changes"],
  ]) {
    await fits(page, name, hash, ready);
  }
  await watcher.assertClean();
  await context.close();
});

test("review: queues with their depth, claim across queues, decide by keyboard, skip, the next claim and the empty state, queue admin", async () => {
  // A policy of its own and a queue (made through the API) fed by its TRUE "Threat" sections.
  const p = await call(policyKey, "POST", "/v1/policies", { policyKey: "review", text: policyText });
  const policyId = p.policy.policyId;
  const queue = (
    await call(policyKey, "POST", "/v1/review-queues", {
      name: "Threats",
      routes: [{ policyId, label: "Threat", outcomes: ["OUTCOME_TRUE"] }],
      priority: 5,
      slaMinutes: 60,
    })
  ).reviewQueue;
  const jobs = [];
  for (const text of ["first: I will kill you", "second: i will kill you, buy now"]) {
    const j = await call(policyKey, "POST", "/v1/jobs", { policyId, waitForCompletion: true, contentData: [{ text }] });
    assert.equal(j.job.status, "JOB_STATUS_COMPLETED");
    jobs.push(j.job.jobUuid);
  }
  const stats = () => call(policyKey, "GET", `/v1/review-queues/${queue.queueId}/stats`);
  await until("two open items", async () => (await stats()).open === 2);

  const { context, page, watcher } = await newPage();
  await signIn(page, policyKey);
  await page.getByRole("link", { name: "Review" }).click();
  const row = page.locator(`table.queues tr[data-queue="${queue.queueId}"]`);
  await row.waitFor();
  assert.equal(await row.locator('[data-stat="open"]').textContent(), "2");
  assert.match(await row.locator('[data-stat="oldest"]').textContent(), /\d+ s|min/);
  assert.match(await row.locator('[data-stat="breaches"]').textContent(), /^0 \(SLA 60 min\)$/);
  await screenshot(page, "review-queues");

  // The first claim is the oldest item, with its text, the flagged span and the report.
  await page.getByRole("button", { name: "Start reviewing" }).click();
  const item = page.locator("article.review-item");
  await item.waitFor();
  const first = await item.getAttribute("data-item");
  assert.match(await item.locator(".review-content").textContent(), /first: I will kill you/);
  await untilTexts(item.locator(".review-content mark"), ["I will kill you"]);
  await item.locator('details.section[data-section="Threat"]').waitFor();
  await screenshot(page, "review-item");

  // S skips it: the next claim is the other item.
  await page.keyboard.press("s");
  await page.waitForFunction((f) => {
    const a = document.querySelector("article.review-item");
    return a && a.getAttribute("data-item") !== f;
  }, first);
  const second = await item.getAttribute("data-item");
  assert.match(await item.locator(".review-content").textContent(), /second: i will kill you/);
  // 1 picks Threat (the matched label comes first), F overturns it, Enter submits and claims the next.
  await page.keyboard.press("1");
  await page.keyboard.press("f");
  assert.equal(await item.locator('tr[data-label-row="Threat"]').getAttribute("data-decision"), "FALSE");
  await page.keyboard.press("Enter");
  await page.waitForFunction((s) => document.querySelector("article.review-item")?.getAttribute("data-item") !== s, second);
  assert.equal(await item.getAttribute("data-item"), first, "the skipped item comes back last");
  // Enter without a decision is refused on the page.
  await page.keyboard.press("Enter");
  await item.locator(".note.error", { hasText: "Decide at least one label" }).waitFor();
  await page.keyboard.press("1");
  await page.keyboard.press("t");
  await page.keyboard.press("Enter");
  await page.locator('[data-state="empty"]', { hasText: "Nothing left to review" }).waitFor();
  await screenshot(page, "review-empty");

  // The server has both decisions, as the keys set them, and the queue is empty.
  const s = await stats();
  assert.equal(s.open, 0);
  assert.equal(s.decided, 2);
  assert.deepEqual(
    s.labels.map((l) => [l.label, l.decided, l.overturned]),
    [["Threat", 2, 1]],
  );
  const decided = (await call(policyKey, "GET", `/v1/review-queues/${queue.queueId}/items?state=REVIEW_ITEM_STATE_DECIDED`)).reviewItems;
  const outcomes = Object.fromEntries(decided.map((i) => [i.reviewItemId, i.decision.labels.map((l) => `${l.label}=${l.outcome}`).join(",")]));
  assert.deepEqual(outcomes, { [first]: "Threat=OUTCOME_TRUE", [second]: "Threat=OUTCOME_FALSE" });

  // Queue admin: create one with one route, see it listed, delete it.
  await page.getByRole("button", { name: "Back to the queues" }).click();
  // (the list is read again; the old counts stay on screen until it arrives)
  await row.locator('[data-stat="decided"]', { hasText: /^2$/ }).waitFor();
  assert.equal(await row.locator('[data-stat="open"]').textContent(), "0");
  await page.locator("details.new-queue summary").click();
  const form = page.locator("details.new-queue form");
  await form.getByLabel("Name", { exact: true }).fill("Spam <b>check</b>");
  await form.getByLabel("Policy id", { exact: true }).fill(policyId);
  await form.getByLabel("Section (empty: any)").fill("Spam");
  await form.getByRole("button", { name: "Create queue" }).click();
  const made = page.locator("table.queues tr", { hasText: "Spam <b>check</b>" });
  await made.waitFor();
  await noMarkup(page, "the review page");
  const listed = (await call(policyKey, "GET", "/v1/review-queues")).reviewQueues;
  const created = listed.find((q) => q.name === "Spam <b>check</b>");
  assert.equal(created.routes.length, 1);
  const { policyId: routed, label: section, outcomes: when } = created.routes[0];
  assert.deepEqual({ routed, section, when }, { routed: policyId, section: "Spam", when: ["OUTCOME_TRUE"] });
  await made.getByRole("button", { name: "Delete queue Spam <b>check</b>" }).click();
  await made.getByRole("button", { name: "Delete with its items" }).click();
  await made.waitFor({ state: "detached" });
  assert.equal((await call(policyKey, "GET", "/v1/review-queues")).reviewQueues.some((q) => q.queueId === created.queueId), false);

  // The page fits a phone.
  await page.setViewportSize({ width: 390, height: 844 });
  await fits(page, "review", "#/review", "table.queues");
  await watcher.assertClean();
  await context.close();
});

test("reviewer key: the review pages only, three decisions and a skip by keyboard, the queue's counts, markup as text", async () => {
  // An admin key makes the policy, the queue (above every other) and the jobs.
  const p = await call(policyKey, "POST", "/v1/policies", { policyKey: "reviewer", text: policyText });
  const policyId = p.policy.policyId;
  const queue = (
    await call(policyKey, "POST", "/v1/review-queues", {
      name: "Reviewer <b>threats</b>",
      routes: [{ policyId, label: "Threat", outcomes: ["OUTCOME_TRUE"] }],
      priority: 9,
    })
  ).reviewQueue;
  const contentXSS = `<img src=x onerror="window.__xss='content'">`;
  const commentXSS = `<img src=x onerror="window.__xss='comment'">`;
  const texts = [`one: I will kill you ${contentXSS}`, "two: I will kill you", "three: I will kill you", "four: I will kill you"];
  const jobOf = {};
  for (const text of texts) {
    const j = await call(policyKey, "POST", "/v1/jobs", { policyId, waitForCompletion: true, contentData: [{ text }] });
    assert.equal(j.job.status, "JOB_STATUS_COMPLETED");
    jobOf[text.split(":")[0]] = j.job.jobUuid;
  }
  const stats = () => call(policyKey, "GET", `/v1/review-queues/${queue.queueId}/stats`);
  await until("four open items", async () => (await stats()).open === 4);

  const { context, page, watcher } = await newPage();
  await signIn(page, reviewerKey);
  // The review page is the first page, and the only one in the navigation.
  assert.deepEqual(await page.locator("nav[aria-label=Main] a").allTextContents(), ["Review"]);
  assert.equal(await page.locator(".account .meta").textContent(), "reviewer key");
  const row = page.locator(`table.queues tr[data-queue="${queue.queueId}"]`);
  await row.waitFor();
  assert.equal(await row.locator('[data-stat="open"]').textContent(), "4");
  // No queue administration for a reviewer.
  assert.equal(await page.locator("details.new-queue").count(), 0);
  assert.equal(await page.getByRole("button", { name: /^Delete queue/ }).count(), 0);
  await noMarkup(page, "the reviewer's queues");
  await screenshot(page, "reviewer-queues");

  // The first item is the oldest: its markup is text. S skips it.
  await page.getByRole("button", { name: "Start reviewing" }).click();
  const item = page.locator("article.review-item");
  await item.waitFor();
  const skipped = await item.getAttribute("data-item");
  assert.ok((await item.locator(".review-content").textContent()).includes(texts[0]));
  await noMarkup(page, "a reviewed item");
  await screenshot(page, "reviewer-item");
  await page.keyboard.press("s");

  // Three decisions by keyboard: TRUE, FALSE (with a comment holding markup), TRUE.
  const decided = [];
  for (const [n, verdict] of [
    ["two", "t"],
    ["three", "f"],
    ["four", "t"],
  ]) {
    await page.waitForFunction((want) => document.querySelector("article.review-item .review-content")?.textContent?.includes(want), `${n}:`);
    const id = await item.getAttribute("data-item");
    decided.push(id);
    if (verdict === "f") {
      // The comment box takes the keys while it has the focus; Tab leaves it.
      await page.getByLabel("Comment (optional)").focus();
      await page.keyboard.type(commentXSS);
      await page.keyboard.press("Tab");
    }
    await page.keyboard.press("1");
    await page.keyboard.press(verdict);
    await page.keyboard.press("Enter");
    await page.waitForFunction((prev) => document.querySelector("article.review-item")?.getAttribute("data-item") !== prev, id);
  }
  // The skipped item comes back last; give it back undecided.
  assert.equal(await item.getAttribute("data-item"), skipped);
  await page.getByRole("button", { name: "Give back and stop" }).click();
  await row.locator('[data-stat="decided"]', { hasText: /^3$/ }).waitFor();
  assert.equal(await row.locator('[data-stat="open"]').textContent(), "1");
  await screenshot(page, "reviewer-stats");

  // The server has the three decisions, the comment as it was typed, and the reviewer's name.
  const s = await stats();
  assert.equal(s.decided, 3);
  assert.deepEqual(
    s.labels.map((l) => [l.label, l.decided, l.overturned]),
    [["Threat", 3, 1]],
  );
  const items = (await call(policyKey, "GET", `/v1/review-queues/${queue.queueId}/items?state=REVIEW_ITEM_STATE_DECIDED`)).reviewItems;
  assert.deepEqual(items.map((i) => i.reviewItemId).sort(), [...decided].sort());
  const overturned = items.find((i) => i.decision.labels[0].outcome === "OUTCOME_FALSE");
  assert.equal(overturned.decision.comment, commentXSS);
  assert.equal(overturned.decision.decidedBy, "Ana");

  // The job of an item opens, without feedback; a page outside the review is refused on the page.
  await page.goto(`${baseUrl()}/console/#/jobs/${jobOf.one}`);
  await page.locator(`article.job[data-job="${jobOf.one}"]`).waitFor();
  assert.equal(await page.locator("#feedback-title").count(), 0);
  await noMarkup(page, "the job of an item");
  await page.goto(`${baseUrl()}/console/#/policies`);
  await page.locator('[data-state="forbidden"]', { hasText: "Not available to a reviewer key" }).waitFor();
  await watcher.assertClean();
  await context.close();
});
