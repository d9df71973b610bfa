// Policies of a policy-first account and, for one policy, its versions
// (active, shadow and draft marked, any other one activated with a button),
// an editor that publishes a new version as active, shadow or draft, the
// shadow version's agreement with the live one and its disagreements, and
// the shown version's live metrics.
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, loadAll, must, type Schemas } from "../api";
import { RuleEditor } from "../components/RuleEditor";
import { Pager, usePages } from "../components/Pager";
import { Empty, ErrorNote, Show } from "../components/States";
import { formatTime, shortId } from "../format";
import { useAction, useLoad } from "../hooks";
import { href, navigate, type Route } from "../router";
import { ActivateButton, PolicyVersionMetrics, ShadowPanel } from "./PolicyQuality";

type Policy = Schemas["Policy"];
type Version = Schemas["PolicyVersion"];
type Mode = "POLICY_VERSION_MODE_ACTIVE" | "POLICY_VERSION_MODE_SHADOW" | "POLICY_VERSION_MODE_DRAFT";

const publishLabel: Record<Mode, string> = {
  POLICY_VERSION_MODE_ACTIVE: "Publish and activate",
  POLICY_VERSION_MODE_SHADOW: "Publish as shadow",
  POLICY_VERSION_MODE_DRAFT: "Publish as draft",
};

// The policy's own fields say which versions are active and shadow now
// (a version's mode is what it was published as).
function ModeBadge({ policy, version }: { policy: Policy; version: Version }) {
  if (version.policyVersionId === policy.activeVersionId) return <span class="badge active">active</span>;
  if (version.policyVersionId === policy.shadowVersionId) return <span class="badge shadow">shadow</span>;
  return <span class="badge draft">draft</span>;
}

export function Policies() {
  const pages = usePages();
  const token = pages.token;
  const policies = useLoad(() => must(api.GET("/v1/policies", { params: { query: { pageSize: 50, ...(token ? { pageToken: token } : {}) } } })), [token]);
  return (
    <section aria-labelledby="policies-title">
      <h1 id="policies-title">Policies</h1>
      <NewPolicy />
      <Show value={policies} what="policies">
        {(page) => (
          <>
            {page.policies.length === 0 ? (
              <Empty>No policies yet.</Empty>
            ) : (
              <div class="table-wrap">
                <table class="policies">
                  <caption class="visually-hidden">Policies, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Key</th>
                      <th scope="col">Policy id</th>
                      <th scope="col">Active version</th>
                      <th scope="col">Updated</th>
                    </tr>
                  </thead>
                  <tbody>
                    {page.policies.map((p) => (
                      <tr key={p.policyId} data-policy={p.policyId}>
                        <td data-label="Key">
                          <a href={href(["policies", p.policyId])}>{p.policyKey}</a>
                          {p.disabled && <span class="badge">disabled</span>}
                        </td>
                        <td data-label="Policy id" class="mono">
                          {p.policyId}
                        </td>
                        <td data-label="Active version" class="mono">
                          {shortId(p.activeVersionId)}
                        </td>
                        <td data-label="Updated">{formatTime(p.updated)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager what="policies" pages={pages} nextPageToken={page.nextPageToken} />
          </>
        )}
      </Show>
    </section>
  );
}

const starter = `LABEL "Threat": "remove" {\n    =("i will kill you")\n}\n`;

function NewPolicy() {
  const [open, setOpen] = useState(false);
  const [key, setKey] = useState("");
  const [text, setText] = useState(starter);
  const create = useAction(async () => {
    const r = await must(api.POST("/v1/policies", { body: { policyKey: key, text } }));
    navigate(href(["policies", r.policy.policyId]));
  });
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)}>
        New policy
      </button>
    );
  }
  const compileErrors = create.error instanceof ApiError ? create.error.compilationErrors() : [];
  return (
    <form class="card" onSubmit={create.onSubmit} aria-label="New policy">
      <label>
        Policy key
        <input type="text" required maxLength={128} pattern="[A-Za-z0-9][A-Za-z0-9._\-]*" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
      </label>
      <RuleEditor id="new-policy-rules" label="Policy" kind="RULES_KIND_POLICY" value={text} onChange={setText} extraErrors={compileErrors} />
      <button type="submit" disabled={create.busy}>
        Create policy
      </button>
      <button type="button" class="link" onClick={() => setOpen(false)}>
        Cancel
      </button>
      {compileErrors.length === 0 && <ErrorNote error={create.error} />}
    </form>
  );
}

function loadVersions(policyId: string): Promise<Version[]> {
  return loadAll(async (pageToken) => {
    const page = await must(
      api.GET("/v1/policies/{policyId}/versions", { params: { path: { policyId }, query: { pageSize: 1000, ...(pageToken ? { pageToken } : {}) } } }),
    );
    return { items: page.policyVersions, next: page.nextPageToken };
  });
}

export function PolicyDetail({ policyId, route }: { policyId: string; route: Route }) {
  const policy = useLoad(() => must(api.GET("/v1/policies/{policyId}", { params: { path: { policyId } } })).then((r) => r.policy), [policyId]);
  const versions = useLoad(() => loadVersions(policyId), [policyId]);
  const selected = route.query.get("version") ?? "";
  const reload = () => {
    policy.reload();
    versions.reload();
  };
  return (
    <Show value={policy} what="policy">
      {(p) => (
        <article class="policy" data-policy={p.policyId}>
          <p class="crumbs">
            <a href={href(["policies"])}>Policies</a> /
          </p>
          <h1>
            Policy <span class="policy-key">{p.policyKey}</span>
          </h1>
          <dl class="facts">
            <div>
              <dt>Policy id</dt>
              <dd class="mono">{p.policyId}</dd>
            </div>
            <div>
              <dt>Active version</dt>
              <dd class="mono">{p.activeVersionId}</dd>
            </div>
            {p.shadowVersionId && (
              <div>
                <dt>Shadow version</dt>
                <dd class="mono">
                  {p.shadowVersionId} at {((p.shadowSampleRate ?? 1) * 100).toFixed(0)}%
                </dd>
              </div>
            )}
            <div>
              <dt>Created</dt>
              <dd>{formatTime(p.created)}</dd>
            </div>
            <div>
              <dt>Jobs</dt>
              <dd>
                <a href={href(["jobs"], { policy: p.policyId })}>Jobs of this policy</a>
              </dd>
            </div>
          </dl>
          <Show value={versions} what="versions">
            {(vs) => <PolicyVersions policy={p} versions={vs} selected={selected} onCreated={reload} />}
          </Show>
        </article>
      )}
    </Show>
  );
}

function PolicyVersions({ policy, versions, selected, onCreated }: { policy: Policy; versions: readonly Version[]; selected: string; onCreated: () => void }) {
  const active = versions.find((v) => v.policyVersionId === policy.activeVersionId);
  const shown = versions.find((v) => v.policyVersionId === selected) ?? active ?? versions[versions.length - 1];
  // The shadow panel follows the policy's shadow, or a shown version that was one.
  const shadow = versions.find((v) => v.policyVersionId === policy.shadowVersionId) ?? (shown?.mode === "POLICY_VERSION_MODE_SHADOW" ? shown : undefined);
  const [text, setText] = useState(shown?.text ?? "");
  const [mode, setMode] = useState<Mode>("POLICY_VERSION_MODE_ACTIVE");
  const [rate, setRate] = useState("1");
  useEffect(() => setText(shown?.text ?? ""), [shown?.policyVersionId, shown?.text]);

  const publish = useAction(async () => {
    const body =
      mode === "POLICY_VERSION_MODE_SHADOW" ? { text, mode, shadowSampleRate: Number(rate) } : { text, ...(mode === "POLICY_VERSION_MODE_ACTIVE" ? {} : { mode }) };
    const r = await must(api.POST("/v1/policies/{policyId}/versions", { params: { path: { policyId: policy.policyId } }, body }));
    onCreated();
    navigate(href(["policies", policy.policyId], { version: r.policyVersion.policyVersionId }));
  });
  const compileErrors = publish.error instanceof ApiError ? publish.error.compilationErrors() : [];

  return (
    <>
      <section aria-labelledby="pv-title">
        <h2 id="pv-title">Versions</h2>
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Versions of {policy.policyKey}</caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Created</th>
                <th scope="col">Complexity</th>
                <th scope="col">Tokens</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {versions.map((v) => (
                <tr key={v.policyVersionId} class={v === shown ? "selected" : undefined} data-version={v.policyVersionId}>
                  <td data-label="Version">
                    <a href={href(["policies", policy.policyId], { version: v.policyVersionId })} aria-current={v === shown ? "true" : undefined}>
                      v{v.sequentialVersion}
                    </a>
                    <ModeBadge policy={policy} version={v} />
                  </td>
                  <td data-label="Created">{formatTime(v.created)}</td>
                  <td data-label="Complexity">{v.complexityScore.toFixed(2)}</td>
                  <td data-label="Tokens">{v.tokenCountsV2.dslTokenCount}</td>
                  <td data-label="Actions">{v.policyVersionId !== policy.activeVersionId && <ActivateButton policy={policy} version={v} onActivated={onCreated} />}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {shown && (
          <>
            <h3>
              v{shown.sequentialVersion} <span class="mono meta">{shown.policyVersionId}</span>
            </h3>
            <pre class="rules" data-version-text={shown.policyVersionId}>
              {shown.text}
            </pre>
          </>
        )}
      </section>
      {shown && <PolicyVersionMetrics key={`m-${shown.policyVersionId}`} policy={policy} version={shown} />}
      {shadow && <ShadowPanel key={`s-${shadow.policyVersionId}`} policy={policy} version={shadow} />}
      <section aria-labelledby="edit-title">
        <h2 id="edit-title">New version</h2>
        <form onSubmit={publish.onSubmit} aria-label={`New version of ${policy.policyKey}`}>
          <RuleEditor id="policy-rules" label="Policy" kind="RULES_KIND_POLICY" value={text} onChange={setText} extraErrors={compileErrors} />
          <fieldset class="mode">
            <legend>Publish as</legend>
            <label class="inline">
              <input type="radio" name="mode" checked={mode === "POLICY_VERSION_MODE_ACTIVE"} onChange={() => setMode("POLICY_VERSION_MODE_ACTIVE")} /> active: jobs
              are evaluated with it from now on
            </label>
            <label class="inline">
              <input type="radio" name="mode" checked={mode === "POLICY_VERSION_MODE_SHADOW"} onChange={() => setMode("POLICY_VERSION_MODE_SHADOW")} /> shadow:
              evaluated on live jobs after their result, for comparison only
            </label>
            {mode === "POLICY_VERSION_MODE_SHADOW" && (
              <label>
                Share of live jobs (0 to 1)
                <input type="text" inputMode="decimal" size={6} value={rate} onInput={(e) => setRate(e.currentTarget.value)} aria-invalid={!badRate(rate) ? undefined : true} />
              </label>
            )}
            <label class="inline">
              <input type="radio" name="mode" checked={mode === "POLICY_VERSION_MODE_DRAFT"} onChange={() => setMode("POLICY_VERSION_MODE_DRAFT")} /> draft: stored,
              used by nothing until activated
            </label>
          </fieldset>
          <button type="submit" disabled={publish.busy || text.trim() === "" || (mode === "POLICY_VERSION_MODE_SHADOW" && badRate(rate))}>
            {publishLabel[mode]}
          </button>
          {compileErrors.length === 0 && <ErrorNote error={publish.error} />}
        </form>
      </section>
    </>
  );
}

function badRate(v: string): boolean {
  const n = Number(v);
  return v.trim() === "" || !(n >= 0 && n <= 1);
}
