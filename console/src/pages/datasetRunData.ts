// What the dataset run views read: runs, all of a label's examples (to
// show the content of examples a run lists by id), and version names.
import { api, loadAll, must, type Schemas } from "../api";
import { shortId } from "../format";

type Run = Schemas["DatasetRun"];
type Version = Schemas["LabelVersion"];
export type Example = Schemas["DatasetExample"];

// loadExamples reads all the label's examples (at most 10,000).
export async function loadExamples(labelId: string): Promise<Map<string, Example>> {
  const all = await loadAll(async (page_token) => {
    const page = await must(
      api.GET("/v1/labels/{labelId}/examples", { params: { path: { labelId }, query: { page_size: 1000, ...(page_token ? { page_token } : {}) } } }),
    );
    return { items: page.examples, next: page.nextPageToken };
  });
  return new Map(all.map((e) => [e.exampleId, e]));
}

export function versionName(versions: readonly Version[], id: string): string {
  const v = versions.find((x) => x.labelVersionId === id);
  return v ? `v${v.sequentialVersion}` : shortId(id);
}

export function loadRun(labelId: string, datasetRunId: string): Promise<Run> {
  return must(api.GET("/v1/labels/{labelId}/dataset-runs/{datasetRunId}", { params: { path: { labelId, datasetRunId } } })).then((r) => r.datasetRun);
}
