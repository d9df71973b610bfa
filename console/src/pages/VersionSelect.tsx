// The choice of a label version, shown as v<n> and the end of its id.
import type { Schemas } from "../api";
import { shortId } from "../format";

export function VersionSelect({
  versions,
  value,
  onChange,
}: {
  versions: readonly Schemas["LabelVersion"][];
  value: string;
  onChange: (labelVersionId: string) => void;
}) {
  return (
    <label>
      Version
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {versions.map((v) => (
          <option key={v.labelVersionId} value={v.labelVersionId}>
            v{v.sequentialVersion} ({shortId(v.labelVersionId)})
          </option>
        ))}
      </select>
    </label>
  );
}
