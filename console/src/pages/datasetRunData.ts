// What the dataset run views read: runs, all of a label's examples (to
// show the content of examples a run lists by id), and version names.
import { api, must, type Schemas } from "../api";
import { shortId } from "../format";

type Run = Schemas["DatasetRun"];
type Version = Schemas["LabelVersion"];
export type Example = Schemas["DatasetExample"];

// loadExamples reads all the label's examples (at most 10,000).
export async function loadExamples(labelId: string): Promise<Map<string, Example>> {
  const out = new Map<string, Example>();
  let page_token: string | undefined;
  do {
    const page = await must(
      api.GET("/v1/labels/{labelId}/examples", { params: { path: { labelId }, query: { page_size: 1000, ...(page_token ? { page_token } : {}) } } }),
    );
    for (const e of page.examples) out.set(e.exampleId, e);
    page_token = page.nextPageToken;
  } while (page_token && out.size < 10_000);
  return out;
}

export function versionName(versions: readonly Version[], id: string): string {
  const v = versions.find((x) => x.labelVersionId === id);
  return v ? `v${v.sequentialVersion}` : shortId(id);
}

export function loadRun(labelId: string, datasetRunId: string): Promise<Run> {
  return must(api.GET("/v1/labels/{labelId}/dataset-runs/{datasetRunId}", { params: { path: { labelId, datasetRunId } } })).then((r) => r.datasetRun);
}
