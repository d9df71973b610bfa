// ESLint for the review console (console/README.md), run by `make lint`
// (lint-console). eslint-config-preact brings the JSX and hooks rules as
// Preact applies them (rules-of-hooks, exhaustive-deps, keys in lists,
// no string refs...); typescript-eslint then parses the .ts/.tsx sources
// and replaces the core rules that TypeScript's own checks make wrong or
// redundant. Its rules that need type information are left out: tsc
// (`make console`) already type-checks with strict settings, and a second
// type-aware pass would double the lint's time.
import preact from "eslint-config-preact";
import tseslint from "typescript-eslint";

export default tseslint.config(
  // Only the console is linted here; the bundle and the types made from
  // openapi.yaml are build outputs.
  { ignores: ["**/*", "!console/", "!console/**", "console/dist/", "console/src/generated/"] },
  ...preact,
  ...tseslint.configs.recommended,
  {
    files: ["console/**/*.{ts,tsx,mjs}"],
    linterOptions: { reportUnusedDisableDirectives: "error" },
  },
);
