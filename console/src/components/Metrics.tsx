// Quality figures shared by the label and policy pages: the confusion
// counts with precision, recall and F1 (a dataset run's, or a version's on
// live traffic from the feedback given on the job page). A ratio whose
// denominator is 0 is absent in the API and shown as a dash, never as 0.
import { useState } from "preact/hooks";
import type { Schemas } from "../api";
import { useLoad } from "../hooks";
import { Empty, Show } from "./States";

type VersionMetric = Schemas["VersionMetric"];

export function ratio(v: number | undefined): string {
  return v === undefined ? "–" : `${(v * 100).toFixed(1)}%`;
}

// delta shows how a ratio moved between two runs, in percentage points.
export function delta(now: number | undefined, base: number | undefined): string {
  if (now === undefined || base === undefined) return "";
  const d = (now - base) * 100;
  if (Math.abs(d) < 0.05) return "±0";
  return `${d > 0 ? "+" : "−"}${Math.abs(d).toFixed(1)} pt`;
}

// RatioCells are the table cells of precision, recall and F1 (and
// accuracy when the figures have it), marked for the tests to read.
export function RatioCells({ rates }: { rates: { precision?: number; recall?: number; f1?: number; accuracy?: number } }) {
  const shown: [string, string, number | undefined][] = [
    ["Precision", "precision", rates.precision],
    ["Recall", "recall", rates.recall],
    ["F1", "f1", rates.f1],
  ];
  if ("accuracy" in rates) shown.push(["Accuracy", "accuracy", rates.accuracy]);
  return (
    <>
      {shown.map(([name, key, v]) => (
        <td key={key} data-label={name} data-metric={key}>
          {ratio(v)}
        </td>
      ))}
    </>
  );
}

// The bounds of a live metrics window, from datetime-local inputs (read as
// UTC, as every time in the console is shown).
function isoOrUndefined(local: string): string | undefined {
  if (!local) return undefined;
  const d = new Date(`${local}Z`);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

// LiveMetrics shows a version's metrics; versionId keys the loading (load
// itself may be a new function on each render).
export function LiveMetrics({
  versionId,
  load,
  what,
}: {
  versionId: string;
  load: (window: { since?: string; until?: string }) => Promise<{ metrics: VersionMetric[] }>;
  what: string;
}) {
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const s = isoOrUndefined(since);
  const u = isoOrUndefined(until);
  const [tick, setTick] = useState(0);
  // The answer carries the version it is for, so that the table says whose
  // figures it shows while a newly chosen version's are on their way.
  const metrics = useLoad(
    () => load({ ...(s ? { since: s } : {}), ...(u ? { until: u } : {}) }).then((m) => ({ ...m, versionId })),
    [versionId, s, u, tick],
  );
  return (
    <section class="live-metrics" aria-label={`Live metrics of ${what}`}>
      <p class="meta">
        From the jobs evaluated with {what} and the feedback given on them (Right/Wrong on the job page). Times are UTC.{" "}
        <button type="button" class="link" onClick={() => setTick((t) => t + 1)}>
          Refresh
        </button>
      </p>
      <div class="filters">
        <label>
          Since
          <input type="datetime-local" value={since} onInput={(e) => setSince(e.currentTarget.value)} />
        </label>
        <label>
          Until
          <input type="datetime-local" value={until} onInput={(e) => setUntil(e.currentTarget.value)} />
        </label>
      </div>
      <Show value={metrics} what="metrics">
        {(m) =>
          m.metrics.length === 0 ? (
            <Empty>No evaluations in this window.</Empty>
          ) : (
            <div class="table-wrap">
              <table class="metrics" data-version-id={m.versionId}>
                <caption class="visually-hidden">Live metrics per label</caption>
                <thead>
                  <tr>
                    <th scope="col">Label</th>
                    <th scope="col">Evaluations</th>
                    <th scope="col">Positives</th>
                    <th scope="col">Annotations</th>
                    <th scope="col">TP / FP / TN / FN</th>
                    <th scope="col">Precision</th>
                    <th scope="col">Recall</th>
                    <th scope="col">F1</th>
                  </tr>
                </thead>
                <tbody>
                  {m.metrics.map((r) => (
                    <tr key={r.label} data-metric-label={r.label}>
                      <td data-label="Label">{r.label}</td>
                      <td data-label="Evaluations">{r.evaluations}</td>
                      <td data-label="Positives">{r.positives}</td>
                      <td data-label="Annotations">{r.annotations}</td>
                      <td data-label="TP / FP / TN / FN">
                        {r.truePositives} / {r.falsePositives} / {r.trueNegatives} / {r.falseNegatives}
                      </td>
                      <RatioCells rates={r} />
                    </tr>
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
