// The official OpenAI Node SDK (npm openai, pinned in package.json) against
// a real contenteval server, in its own node process: what a user of the SDK
// does after changing the base URL. cmd/contenteval/moderation_sdk_test.go
// starts the server (SQLite and PostgreSQL), prepares the accounts, a policy
// "mod" and an image server, compiles this file with tsc --strict and runs
// it with `node --test`, passing what it prepared in the environment.
import { test } from "node:test";
import assert from "node:assert/strict";
import OpenAI from "openai";

const env = (name: string): string => {
  const v = process.env[name];
  assert.ok(v, `${name} is not set: run this through go test ./cmd/contenteval -run TestModerationOpenAINodeSDK`);
  return v;
};
const baseURL = env("CONTENTEVAL_URL") + "/v1";
const imageURL = env("CONTENTEVAL_IMAGE_URL");
const imageDataURL = env("CONTENTEVAL_IMAGE_DATA_URL");

const client = (apiKey: string, options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
  new OpenAI({ apiKey, baseURL, maxRetries: 2, ...options });
const sdk = client(env("CONTENTEVAL_KEY"));

test("a text: typed categories, scores and applied input types; the job is recorded", async () => {
  const res = await sdk.moderations.create({ model: "mod", input: "I will kill you" });
  assert.match(res.id, /^modr-/);
  assert.equal(res.model, "mod");
  assert.equal(res.results.length, 1);
  const r = res.results[0];
  assert.ok(r);
  assert.equal(r.flagged, true);
  assert.equal(r.categories.violence, true);
  assert.equal(r.categories.harassment, false);
  assert.equal(r.categories["self-harm"], false);
  assert.ok(r.category_scores.violence >= 0.5);
  assert.equal(r.category_scores.sexual, 0);
  assert.deepEqual(r.category_applied_input_types.violence, ["text"]);
  assert.deepEqual(r.category_applied_input_types.sexual, []);
  const job = await fetch(`${baseURL}/jobs/${res.id.slice("modr-".length)}`, {
    headers: { Authorization: `Bearer ${env("CONTENTEVAL_KEY")}` },
  });
  assert.equal(job.status, 200);
});

test("an array of texts: one result each, in order", async () => {
  const res = await sdk.moderations.create({ model: "mod", input: ["good morning", "you idiot"] });
  assert.equal(res.results.length, 2);
  assert.equal(res.results[0]?.flagged, false);
  assert.equal(res.results[1]?.flagged, true);
  assert.equal(res.results[1]?.categories.harassment, true);
});

test("text and image parts are one input, the image by http URL and by data URL", async () => {
  for (const url of [imageURL, imageDataURL]) {
    const res = await sdk.moderations.create({
      model: "mod",
      input: [
        { type: "text", text: "I will kill you" },
        { type: "image_url", image_url: { url } },
      ],
    });
    assert.equal(res.results.length, 1);
    const r = res.results[0];
    assert.ok(r);
    assert.equal(r.flagged, true);
    assert.equal(r.categories.violence, true);
    assert.deepEqual(r.category_applied_input_types.violence, ["text"]);
    // Our own section (a hash of the image) is a category the SDK's type
    // does not name; it is in the body all the same.
    assert.equal((r.categories as unknown as Record<string, boolean>)["Known"], true);
  }
});

test("omni-moderation-latest: 404 without a default policy, the default with one", async () => {
  await assert.rejects(sdk.moderations.create({ model: "omni-moderation-latest", input: "hello" }), (err: unknown) => {
    assert.ok(err instanceof OpenAI.NotFoundError, String(err));
    assert.equal(err.status, 404);
    assert.equal(err.code, "model_not_found");
    return true;
  });
  const withDefault = client(env("CONTENTEVAL_DEFAULT_KEY"));
  for (const model of ["omni-moderation-latest", undefined]) {
    const res = await withDefault.moderations.create(model ? { model, input: "I will kill you" } : { input: "I will kill you" });
    assert.equal(res.results[0]?.categories.violence, true);
  }
});

test("a model that names nothing is 404 model_not_found; a bad key is 401", async () => {
  await assert.rejects(sdk.moderations.create({ model: "no-such-policy", input: "hello" }), (err: unknown) => {
    assert.ok(err instanceof OpenAI.NotFoundError, String(err));
    assert.equal(err.code, "model_not_found");
    assert.equal(err.param, "model");
    return true;
  });
  await assert.rejects(client("not-a-key").moderations.create({ model: "mod", input: "hello" }), (err: unknown) => {
    assert.ok(err instanceof OpenAI.AuthenticationError, String(err));
    assert.equal(err.status, 401);
    return true;
  });
});

test("a 429: the SDK's retry waits Retry-After and succeeds", async () => {
  const seen: { status: number; retryAfter: string | null }[] = [];
  const limited = client(env("CONTENTEVAL_LIMITED_KEY"), {
    fetch: async (input: string | URL | Request, init?: RequestInit) => {
      const res = await fetch(input, init);
      seen.push({ status: res.status, retryAfter: res.headers.get("retry-after") });
      return res;
    },
  });
  for (let i = 0; i < 2; i++) {
    const res = await limited.moderations.create({ model: "mod", input: "you idiot" });
    assert.equal(res.results[0]?.categories.harassment, true);
  }
  assert.ok(seen.length >= 3, JSON.stringify(seen));
  assert.equal(seen[0]?.status, 200);
  assert.equal(seen[seen.length - 1]?.status, 200);
  for (const s of seen.slice(1, -1)) {
    assert.equal(s.status, 429, JSON.stringify(seen));
    assert.equal(s.retryAfter, "1");
  }
});
