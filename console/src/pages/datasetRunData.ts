// What the dataset run views read: runs, all of a label's examples (to
// show the content of examples a run lists by id), and version names.
import { api, must, type Schemas } from "../api";
import { shortId } from "../format";

type Run = Schemas["DatasetRun"];
type Version = Schemas["LabelVersion"];
export type Example = Schemas["DatasetExample"];

// The examples a run view reads to show their text: all of the label's
// (at most 10,000), but no more than textBudget characters of content, so
// that a label of large examples cannot make the page download hundreds of
// megabytes; the examples past the budget show without their text.
export const textBudget = 8 * 1024 * 1024;

export interface LoadedExamples {
  byId: Map<string, Example>;
  // complete is false when the budget stopped the reading: an example
  // missing from byId may then exist, unread.
  complete: boolean;
}

export async function loadExamples(labelId: string): Promise<LoadedExamples> {
  const byId = new Map<string, Example>();
  let size = 0;
  let page_token: string | undefined;
  do {
    const page = await must(
      api.GET("/v1/labels/{labelId}/examples", { params: { path: { labelId }, query: { page_size: 1000, ...(page_token ? { page_token } : {}) } } }),
    );
    for (const e of page.examples) {
      byId.set(e.exampleId, e);
      size += e.contentData.text?.length ?? 0;
    }
    page_token = page.nextPageToken;
  } while (page_token && byId.size < 10_000 && size < textBudget);
  return { byId, complete: !page_token };
}

// missingExample says why a run lists an example the view has no text for.
export function missingExample(loaded: LoadedExamples | undefined): string {
  return loaded === undefined ? "loading…" : loaded.complete ? "deleted" : "text not loaded: over 8 MB of examples";
}

export function versionName(versions: readonly Version[], id: string): string {
  const v = versions.find((x) => x.labelVersionId === id);
  return v ? `v${v.sequentialVersion}` : shortId(id);
}

export function loadRun(labelId: string, datasetRunId: string): Promise<Run> {
  return must(api.GET("/v1/labels/{labelId}/dataset-runs/{datasetRunId}", { params: { path: { labelId, datasetRunId } } })).then((r) => r.datasetRun);
}
