// Shared by the console's browser test and bench: the server's address and
// keys from the environment, a JSON API caller for seeding (the same public
// API the console uses), and a headless Chromium driven by playwright-core.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

export function env(name, fallback) {
  const v = process.env[name] ?? fallback;
  assert.ok(v, `${name} is not set: run this through go test ./cmd/contenteval -run TestConsoleBrowser`);
  return v;
}

export const baseUrl = () => env("CONTENTEVAL_URL");

// call sends one JSON request and returns the decoded answer, failing on
// any status but the expected one.
export async function call(key, method, path, body, expect = 200) {
  const r = await fetch(baseUrl() + path, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  assert.equal(r.status, expect, `${method} ${path}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

export async function launch() {
  return chromium.launch({
    executablePath: env("CONTENTEVAL_CHROMIUM", "/usr/bin/chromium"),
    // Root in a container has no user namespaces for Chromium's sandbox.
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
}

// watch records what must never happen on a console page: script errors,
// console errors, and Content-Security-Policy violations.
export async function watch(page) {
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__cspViolations = window.__cspViolations ?? [];
      window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  return {
    problems,
    async assertClean() {
      const csp = await page.evaluate(() => window.__cspViolations ?? []);
      // An error status the console handled shows up as a console error of
      // the failed fetch; those are expected where a test provokes them.
      const real = problems.filter((p) => !/Failed to load resource: the server responded with a status of [45]\d\d/.test(p));
      assert.deepEqual([...real, ...csp], [], "the page logged errors or CSP violations");
    },
  };
}

export function artifacts() {
  const dir = env("CONTENTEVAL_CONSOLE_ARTIFACTS", join(process.cwd(), ".artifacts", "console"));
  mkdirSync(dir, { recursive: true });
  return dir;
}

let shot = 0;
export async function screenshot(page, name) {
  shot++;
  const file = join(artifacts(), `${String(shot).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
