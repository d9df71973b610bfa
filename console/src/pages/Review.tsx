// Human review (docs/review.md): the account's queues with their depth,
// oldest open item and SLA breaches; "Start reviewing" claims the next item
// across every queue, shows its retained content, report and hits, and takes
// a decision per label, by mouse or keyboard (1..9 pick a label, T/F set it,
// Enter submits and claims the next, S skips), renewing the claim while the
// item is on screen; and, for admin keys, creating
// a queue with one route and deleting one (a reviewer key is not shown
// them: the server refuses it queue administration).
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, must, session, type Schemas } from "../api";
import { HighlightedText } from "../components/Highlight";
import { OutcomeBadge, ReportTree, reportSpans } from "../components/ReportTree";
import { Empty, ErrorNote, Show } from "../components/States";
import { formatScore, formatTime, outcomeName, shortId } from "../format";
import { useAction, useLoad } from "../hooks";
import { href } from "../router";

type Queue = Schemas["ReviewQueue"];
type Stats = Schemas["ReviewQueueStats"];
type Claim = Schemas["ReviewClaimResponse"];
type Item = Schemas["ReviewItem"];
type Verdict = "OUTCOME_TRUE" | "OUTCOME_FALSE";

// formatAge renders the API's "12.5s" duration as "12 s", "3 min 5 s" or "2 h 4 min".
function formatAge(d: string | undefined): string {
  const m = /^(\d+(?:\.\d+)?)s$/.exec(d ?? "");
  if (!m?.[1]) return "–";
  const s = Math.floor(Number(m[1]));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

async function loadQueues(): Promise<{ queue: Queue; stats: Stats }[]> {
  const queues = (await must(api.GET("/v1/review-queues", {}))).reviewQueues;
  return Promise.all(
    queues.map(async (queue) => ({
      queue,
      stats: await must(api.GET("/v1/review-queues/{queueId}/stats", { params: { path: { queueId: queue.queueId } } })),
    })),
  );
}

export function Review() {
  const admin = session.accountType() !== "reviewer";
  const queues = useLoad(loadQueues, []);
  // undefined: not reviewing; null: nothing was open at the last claim.
  const [claim, setClaim] = useState<Claim | null | undefined>(undefined);
  const next = useAction(async () => {
    try {
      setClaim(await must(api.POST("/v1/review-queues/{queueId}/claim", { params: { path: { queueId: "-" } } })));
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) setClaim(null);
      else throw e;
    }
  });
  const stop = () => {
    setClaim(undefined);
    queues.reload();
  };

  return (
    <section aria-labelledby="review-title">
      <h1 id="review-title">Review</h1>
      {claim === undefined ? (
        <p>
          <button type="button" class="start" disabled={next.busy} onClick={() => next.run()}>
            Start reviewing
          </button>{" "}
          <span class="meta">claims the next item across every queue, highest priority first</span>
        </p>
      ) : claim === null ? (
        <div class="review-empty">
          <Empty>Nothing left to review: no queue has an open item.</Empty>
          <p>
            <button type="button" disabled={next.busy} onClick={() => next.run()}>
              Check again
            </button>{" "}
            <button type="button" class="link" onClick={stop}>
              Back to the queues
            </button>
          </p>
        </div>
      ) : (
        <ItemView key={claim.claimToken} claim={claim} claimNext={() => next.run()} onStop={stop} />
      )}
      <ErrorNote error={next.error} />
      {claim === undefined && (
        <Show value={queues} what="review queues">
          {(list) => (
            <>
              {list.length === 0 ? (
                <Empty>No review queues. {admin ? "An admin key creates them below." : "An admin key creates them."}</Empty>
              ) : (
                <QueueTable rows={list} admin={admin} onChanged={queues.reload} />
              )}
              {admin && <NewQueue onCreated={queues.reload} />}
            </>
          )}
        </Show>
      )}
    </section>
  );
}

function QueueTable({ rows, admin, onChanged }: { rows: readonly { queue: Queue; stats: Stats }[]; admin: boolean; onChanged: () => void }) {
  return (
    <div class="table-wrap">
      <table class="queues">
        <caption class="visually-hidden">Review queues, highest priority first</caption>
        <thead>
          <tr>
            <th scope="col">Queue</th>
            <th scope="col">Priority</th>
            <th scope="col">Open</th>
            <th scope="col">Claimed</th>
            <th scope="col">Oldest open</th>
            <th scope="col">SLA breaches</th>
            <th scope="col">Decided</th>
            {admin && <th scope="col">Admin</th>}
          </tr>
        </thead>
        <tbody>
          {rows.map(({ queue: q, stats: s }) => (
            <tr key={q.queueId} data-queue={q.queueId}>
              <td data-label="Queue">
                {q.name}
                {q.description ? <div class="meta">{q.description}</div> : null}
                <div class="mono meta">{shortId(q.queueId)}</div>
              </td>
              <td data-label="Priority">{q.priority}</td>
              <td data-label="Open" data-stat="open">
                {s.open}
              </td>
              <td data-label="Claimed" data-stat="claimed">
                {s.claimed}
              </td>
              <td data-label="Oldest open" data-stat="oldest">
                {formatAge(s.oldestOpenAge)}
              </td>
              <td data-label="SLA breaches" data-stat="breaches">
                {s.slaBreaches}
                {q.slaMinutes > 0 ? <span class="meta"> (SLA {q.slaMinutes} min)</span> : null}
              </td>
              <td data-label="Decided" data-stat="decided">
                {s.decided}
              </td>
              {admin && (
                <td data-label="Admin">
                  <DeleteQueue queue={q} onDeleted={onChanged} />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function DeleteQueue({ queue, onDeleted }: { queue: Queue; onDeleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const remove = useAction(async () => {
    await must(api.DELETE("/v1/review-queues/{queueId}", { params: { path: { queueId: queue.queueId } } }));
    onDeleted();
  });
  if (!confirming) {
    return (
      <button type="button" class="link" aria-label={`Delete queue ${queue.name}`} onClick={() => setConfirming(true)}>
        Delete
      </button>
    );
  }
  return (
    <span class="confirm">
      <button type="button" disabled={remove.busy} onClick={() => remove.run()}>
        Delete with its items
      </button>
      <button type="button" class="link" onClick={() => setConfirming(false)}>
        Keep
      </button>
      <ErrorNote error={remove.error} />
    </span>
  );
}

// NewQueue creates a queue with one route: the results of a policy or a
// label whose section (all when empty) came out with one of the outcomes.
function NewQueue({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState("");
  const [kind, setKind] = useState<"policyId" | "labelId">("policyId");
  const [target, setTarget] = useState("");
  const [section, setSection] = useState("");
  const [outcome, setOutcome] = useState<"" | Verdict>("OUTCOME_TRUE");
  const [priority, setPriority] = useState("0");
  const [sla, setSla] = useState("0");
  const create = useAction(async () => {
    await must(
      api.POST("/v1/review-queues", {
        body: {
          name: name.trim(),
          priority: Number(priority) || 0,
          slaMinutes: Number(sla) || 0,
          routes: [{ [kind]: target.trim(), ...(section.trim() ? { label: section.trim() } : {}), ...(outcome ? { outcomes: [outcome] } : {}) }],
        },
      }),
    );
    setName("");
    setTarget("");
    setSection("");
    onCreated();
  });
  return (
    <details class="card new-queue">
      <summary>New queue (admin keys)</summary>
      <form onSubmit={create.onSubmit}>
        <label>
          Name
          <input type="text" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Route by
          <select value={kind} onChange={(e) => setKind(e.currentTarget.value === "labelId" ? "labelId" : "policyId")}>
            <option value="policyId">Policy id</option>
            <option value="labelId">Label id</option>
          </select>
        </label>
        <label>
          {kind === "policyId" ? "Policy" : "Label"} id
          <input type="text" required maxLength={200} value={target} onInput={(e) => setTarget(e.currentTarget.value)} />
        </label>
        <label>
          Section (empty: any)
          <input type="text" maxLength={200} value={section} onInput={(e) => setSection(e.currentTarget.value)} />
        </label>
        <label>
          Outcome
          <select value={outcome} onChange={(e) => setOutcome(e.currentTarget.value === "OUTCOME_FALSE" ? "OUTCOME_FALSE" : e.currentTarget.value === "OUTCOME_TRUE" ? "OUTCOME_TRUE" : "")}>
            <option value="OUTCOME_TRUE">TRUE</option>
            <option value="OUTCOME_FALSE">FALSE</option>
            <option value="">any</option>
          </select>
        </label>
        <label>
          Priority (0..1000)
          <input type="text" inputMode="numeric" pattern="[0-9]{1,4}" value={priority} onInput={(e) => setPriority(e.currentTarget.value)} />
        </label>
        <label>
          SLA minutes (0: none)
          <input type="text" inputMode="numeric" pattern="[0-9]{1,6}" value={sla} onInput={(e) => setSla(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={create.busy}>
          Create queue
        </button>
        <ErrorNote error={create.error} />
      </form>
    </details>
  );
}

// decisionLabels are the labels a decision may name: the report's sections
// (a label outside the report is refused), else the matched ones.
function decisionLabels(item: Item): { label: string; outcome?: string; score?: number }[] {
  const matched = new Map(item.labels.map((l) => [l.label, l]));
  const names = item.report ? item.report.sectionEvaluationReports.map((s) => s.name) : item.labels.map((l) => l.label);
  const seen = new Set<string>();
  const out = [];
  for (const n of names) {
    if (seen.has(n)) continue;
    seen.add(n);
    const m = matched.get(n);
    const s = item.report?.sectionEvaluationReports.find((r) => r.name === n);
    out.push({ label: n, outcome: m?.outcome ?? s?.result, score: m?.score });
  }
  // The matched sections first: they are why the item is here.
  return out.sort((a, b) => Number(matched.has(b.label)) - Number(matched.has(a.label)));
}

// typing is true when a key goes to a text field, where it is text and not a shortcut.
function typing(t: EventTarget | null): boolean {
  return t instanceof Element && t.closest('textarea, select, input:not([type="radio"]):not([type="checkbox"])') !== null;
}

function ItemView({ claim, claimNext, onStop }: { claim: Claim; claimNext: () => Promise<void>; onStop: () => void }) {
  const item = claim.reviewItem;
  const labels = decisionLabels(item);
  const [decisions, setDecisions] = useState<Record<string, Verdict>>({});
  const [picked, setPicked] = useState(0);
  const [comment, setComment] = useState("");
  const token = { claimToken: claim.claimToken };
  const path = { params: { path: { reviewItemId: item.reviewItemId } } };

  const submit = useAction(async () => {
    const chosen = labels.filter((l) => decisions[l.label]).map((l) => ({ label: l.label, outcome: decisions[l.label] as Verdict }));
    if (chosen.length === 0) throw new Error("Decide at least one label (pick it with 1..9, then T or F).");
    await must(api.POST("/v1/review-items/{reviewItemId}/decision", { ...path, body: { ...token, labels: chosen, ...(comment.trim() ? { comment: comment.trim() } : {}) } }));
    await claimNext();
  });
  const skip = useAction(async () => {
    await must(api.POST("/v1/review-items/{reviewItemId}/skip", { ...path, body: token }));
    await claimNext();
  });
  const release = useAction(async () => {
    await must(api.POST("/v1/review-items/{reviewItemId}/release", { ...path, body: token }));
    onStop();
  });
  const busy = submit.busy || skip.busy || release.busy;

  // A claim lasts 10 minutes: while the item is on screen it is renewed
  // every 4, and a renewal the server refuses (the claim was lost) is shown.
  const [lost, setLost] = useState<unknown>(null);
  useEffect(() => {
    const t = setInterval(() => {
      must(api.POST("/v1/review-items/{reviewItemId}/renew", { params: { path: { reviewItemId: item.reviewItemId } }, body: { claimToken: claim.claimToken } })).then(
        () => setLost(null),
        (e: unknown) => setLost(e),
      );
    }, 4 * 60_000);
    return () => clearInterval(t);
  }, [item.reviewItemId, claim.claimToken]);

  const set = (i: number, v: Verdict) => {
    const l = labels[i];
    if (l) setDecisions((d) => ({ ...d, [l.label]: v }));
  };

  // The shortcuts: the handler is replaced at each render (it sees this
  // render's decisions), the listener is added once.
  const onKey = useRef<(e: KeyboardEvent) => void>(() => undefined);
  onKey.current = (e: KeyboardEvent) => {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target) || busy) return;
    const k = e.key.toLowerCase();
    if (k >= "1" && k <= "9" && Number(k) <= labels.length) setPicked(Number(k) - 1);
    else if (k === "t") set(picked, "OUTCOME_TRUE");
    else if (k === "f") set(picked, "OUTCOME_FALSE");
    else if (k === "s") void skip.run();
    else if (k === "enter" && !(e.target instanceof Element && e.target.closest("button, a, summary"))) void submit.run();
    else return;
    e.preventDefault();
  };
  useEffect(() => {
    const h = (e: KeyboardEvent) => onKey.current(e);
    addEventListener("keydown", h);
    return () => removeEventListener("keydown", h);
  }, []);

  const content = item.contentData?.[0];
  return (
    <article class="review-item" data-item={item.reviewItemId} aria-labelledby="item-title">
      <h2 id="item-title">
        Item <span class="mono">{shortId(item.reviewItemId)}</span>
      </h2>
      <dl class="facts">
        <div>
          <dt>Job</dt>
          <dd class="mono">
            <a href={href(["jobs", item.jobUuid])}>{shortId(item.jobUuid)}</a>
          </dd>
        </div>
        <div>
          <dt>Entered</dt>
          <dd>{formatTime(item.created)}</dd>
        </div>
        <div>
          <dt>SLA deadline</dt>
          <dd>{item.slaDeadline ? formatTime(item.slaDeadline) : "none"}</dd>
        </div>
        <div>
          <dt>Claim until</dt>
          <dd>{formatTime(claim.claimExpiresAt)}</dd>
        </div>
      </dl>
      <h3>Content</h3>
      {content?.text !== undefined ? (
        <div class="review-content">
          <HighlightedText text={content.text} spans={item.report ? reportSpans(item.report) : []} />
        </div>
      ) : content ? (
        <p class="meta">This item's content is not text (an image or media); its report and hits are below.</p>
      ) : (
        <p class="meta">The content is no longer kept.</p>
      )}
      <h3>Decision</h3>
      <p class="hint">Keys: 1..9 pick a label, T or F set it, Enter submits and claims the next, S skips.</p>
      <div class="table-wrap">
        <table class="decisions">
          <caption class="visually-hidden">Your outcome per label</caption>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Label</th>
              <th scope="col">Machine</th>
              <th scope="col">Your outcome</th>
            </tr>
          </thead>
          <tbody>
            {labels.map((l, i) => (
              <tr key={l.label} data-label-row={l.label} class={i === picked ? "selected" : undefined} data-decision={outcomeName(decisions[l.label])}>
                <td data-label="Key">{i < 9 ? i + 1 : ""}</td>
                <td data-label="Label">{l.label}</td>
                <td data-label="Machine">
                  <OutcomeBadge outcome={l.outcome} /> {l.score !== undefined ? <span class="score">{formatScore(l.score)}</span> : null}
                </td>
                <td data-label="Your outcome">
                  <fieldset class="verdict">
                    <legend class="visually-hidden">Outcome of {l.label}</legend>
                    {(["OUTCOME_TRUE", "OUTCOME_FALSE"] as const).map((v) => (
                      <label class="inline" key={v}>
                        <input
                          type="radio"
                          name={`decision-${i}`}
                          checked={decisions[l.label] === v}
                          onChange={() => {
                            setPicked(i);
                            set(i, v);
                          }}
                        />{" "}
                        {outcomeName(v)}
                      </label>
                    ))}
                  </fieldset>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <form onSubmit={submit.onSubmit}>
        <label>
          Comment (optional)
          <textarea rows={2} maxLength={4000} value={comment} onInput={(e) => setComment(e.currentTarget.value)} />
        </label>
        <p class="actions">
          <button type="submit" disabled={busy}>
            Submit and next
          </button>{" "}
          <button type="button" disabled={busy} onClick={() => skip.run()}>
            Skip
          </button>{" "}
          <button type="button" class="link" disabled={busy} onClick={() => release.run()}>
            Give back and stop
          </button>
        </p>
        <ErrorNote error={submit.error ?? skip.error ?? release.error ?? lost} />
      </form>
      {item.hits && item.hits.length > 0 && (
        <>
          <h3>Hits</h3>
          <div class="table-wrap">
            <table class="review-hits">
              <caption class="visually-hidden">The label hits of the result</caption>
              <thead>
                <tr>
                  <th scope="col">Label</th>
                  <th scope="col">Where</th>
                  <th scope="col">Score</th>
                </tr>
              </thead>
              <tbody>
                {item.hits.map((h, i) => (
                  <tr key={i}>
                    <td data-label="Label">{h.label}</td>
                    <td data-label="Where">
                      {h.modality.replace(/^MODALITY_/, "")} {h.startTimecode}
                      {h.endTimecode ? `–${h.endTimecode}` : ""}
                    </td>
                    <td data-label="Score">{formatScore(h.score)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      {item.report && <ReportTree report={item.report} />}
    </article>
  );
}
