// Builds console/dist from console/src: one minified ES module (app.js),
// one stylesheet (app.css) and the static files. `make console` runs it
// after the type check; the output is committed and embedded in the
// binary, and CI rebuilds it and fails on a difference
// (`make verify-console`), so the build must be deterministic: no
// timestamps, no source maps with absolute paths, pinned esbuild.
import { build } from "esbuild";
import { copyFile, mkdir, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const src = join(here, "src");
const out = join(here, "dist");

await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });

const result = await build({
  entryPoints: [join(src, "main.tsx")],
  outfile: join(out, "app.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022", "chrome110", "firefox115", "safari16"],
  minify: true,
  legalComments: "eof",
  jsx: "automatic",
  jsxImportSource: "preact",
  charset: "utf8",
  logLevel: "warning",
  metafile: true,
});

for (const f of ["index.html", "icon.svg"]) await copyFile(join(src, f), join(out, f));

// The licences of the npm packages bundled into app.js (read from the
// build's inputs), shipped beside it as their licences ask.
const packages = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (m) packages.add(m[1]);
}
let notices = "Third-party software bundled into app.js\n";
for (const pkg of [...packages].sort()) {
  const dir = join(here, "..", "node_modules", pkg);
  const { version, license } = JSON.parse(await readFile(join(dir, "package.json"), "utf8"));
  const file = (await readdir(dir)).find((f) => /^licen[cs]e/i.test(f));
  if (!file) throw new Error(`${pkg} has no licence file to ship`);
  notices += `\n==== ${pkg} ${version} (${license}) ====\n\n${(await readFile(join(dir, file), "utf8")).trim()}\n`;
}
await writeFile(join(out, "THIRD-PARTY-LICENSES.txt"), notices);

const files = await readdir(out);
for (const [name, o] of Object.entries(result.metafile.outputs)) {
  console.log(`${name.replace(/^.*console\//, "console/")}\t${o.bytes} bytes`);
}
console.log(`console/dist: ${files.sort().join(", ")}`);
