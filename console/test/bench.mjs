// The console's bench (bench/results/console.md), run by
// cmd/contenteval's TestConsoleBench against a real server holding a job
// with 1,000 label hits and a baseline job with one:
//   1. first load: the compressed bytes of JavaScript (and of everything)
//      the browser receives for /console/ (target: under 300 KB of JS);
//   2. the job page: time from navigating to it (signed in, the app
//      loaded) until its hits table holds every hit and a frame has been
//      painted, and from a cold page load to the same point; for the
//      1,000-hit job and the 1-hit baseline, ROUNDS times each,
//      alternating (target: under 1 s for 1,000 hits).
import assert from "node:assert/strict";
import { baseUrl, env, launch } from "./harness.mjs";

const key = env("CONTENTEVAL_POLICY_KEY");
const bigJob = env("CONTENTEVAL_BENCH_BIG_JOB");
const smallJob = env("CONTENTEVAL_BENCH_SMALL_JOB");
const bigHits = Number(env("CONTENTEVAL_BENCH_BIG_HITS"));
const rounds = Number(process.env.CONTENTEVAL_BENCH_ROUNDS ?? "7");

const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
page.setDefaultTimeout(60_000);

// 1. First load, signed out: everything /console/ makes the browser fetch.
const sizes = { script: 0, stylesheet: 0, all: 0, requests: 0 };
const pending = [];
page.on("requestfinished", (req) => {
  pending.push(
    req.sizes().then((s) => {
      const type = req.resourceType();
      sizes.requests++;
      sizes.all += s.responseBodySize + s.responseHeadersSize;
      if (type === "script" || type === "stylesheet") sizes[type] += s.responseBodySize;
    }),
  );
});
await page.goto(`${baseUrl()}/console/`, { waitUntil: "networkidle" });
await page.getByRole("heading", { name: "Sign in" }).waitFor();
await Promise.all(pending);
page.removeAllListeners("requestfinished");
const rawJs = (await (await fetch(`${baseUrl()}/console/app.js`)).arrayBuffer()).byteLength;

// Sign in once; the key stays in this tab's sessionStorage for the rounds.
await page.getByLabel("API key").fill(key);
await page.getByRole("button", { name: "Sign in" }).click();
await page.locator("table.jobs").waitFor();

// warm opens the job from the jobs list inside the loaded app and returns
// the ms until its hit table has n rows and the next frame is painted.
async function warm(job, n) {
  await page.evaluate(() => (location.hash = "#/jobs"));
  await page.locator("table.jobs").waitFor();
  return page.evaluate(
    ([job, n]) =>
      new Promise((resolve) => {
        const start = performance.now();
        location.hash = `#/jobs/${job}`;
        const check = () => {
          if (document.querySelectorAll("tr[data-hit]").length === n && document.querySelector(`article.job[data-job="${job}"]`)) {
            requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - start)));
          } else {
            requestAnimationFrame(check);
          }
        };
        check();
      }),
    [job, n],
  );
}

// cold loads the job's page afresh (the bundle from the server's 304s) and
// returns the ms from the navigation's start to the same point.
async function cold(job, n) {
  // Leave the page first: a URL that differs only in its fragment would be
  // a same-document navigation, not a load.
  await page.goto("about:blank");
  await page.goto(`${baseUrl()}/console/#/jobs/${job}`);
  return page.evaluate(
    (n) =>
      new Promise((resolve) => {
        const check = () => {
          if (document.querySelectorAll("tr[data-hit]").length === n) {
            // performance.now() counts from the navigation's start.
            requestAnimationFrame(() => setTimeout(() => resolve(performance.now())));
          } else {
            requestAnimationFrame(check);
          }
        };
        check();
      }),
    n,
  );
}

const samples = { warmBig: [], warmSmall: [], coldBig: [], coldSmall: [] };
await warm(bigJob, bigHits); // a first visit warms the server's caches and the JIT
for (let i = 0; i < rounds; i++) {
  samples.warmSmall.push(await warm(smallJob, 1));
  samples.warmBig.push(await warm(bigJob, bigHits));
  samples.coldSmall.push(await cold(smallJob, 1));
  samples.coldBig.push(await cold(bigJob, bigHits));
}
// The page really shows the timeline: one marker per hit.
assert.equal(await page.locator("svg rect.marker").count(), bigHits);
await browser.close();

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const max = (xs) => Math.max(...xs);
const ms = (x) => `${x.toFixed(0)} ms`;
const kb = (b) => `${(b / 1024).toFixed(1)} KB`;
console.log(`first load of /console/: ${sizes.requests} requests; JavaScript ${kb(sizes.script)} compressed (${kb(rawJs)} uncompressed), CSS ${kb(sizes.stylesheet)}, everything with headers ${kb(sizes.all)} (target: JS < 300 KB)`);
console.log(`| job page | median | max | ratio to 1 hit (median) |`);
console.log(`|---|---|---|---|`);
console.log(`| in the app, 1 hit | ${ms(median(samples.warmSmall))} | ${ms(max(samples.warmSmall))} | 1 |`);
console.log(`| in the app, ${bigHits} hits | ${ms(median(samples.warmBig))} | ${ms(max(samples.warmBig))} | ${(median(samples.warmBig) / median(samples.warmSmall)).toFixed(2)} |`);
console.log(`| cold load, 1 hit | ${ms(median(samples.coldSmall))} | ${ms(max(samples.coldSmall))} | 1 |`);
console.log(`| cold load, ${bigHits} hits | ${ms(median(samples.coldBig))} | ${ms(max(samples.coldBig))} | ${(median(samples.coldBig) / median(samples.coldSmall)).toFixed(2)} |`);
console.log(`rounds: ${rounds}; samples (ms): ${JSON.stringify(Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, v.map((x) => Math.round(x))])))}`);
