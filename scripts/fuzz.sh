#!/usr/bin/env bash
# Runs every fuzz target of the module for a short time (default 15s each):
# parsers and decoders must not panic or hang on any input.
set -euo pipefail
fuzztime="${1:-15s}"
cd "$(dirname "$0")/.."
status=0
while IFS=: read -r file _ line; do
  name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/' <<<"$line")
  pkg="./$(dirname "$file")"
  echo "fuzz $pkg $name ($fuzztime)"
  if ! go test -run='^$' -fuzz="^${name}\$" -fuzztime="$fuzztime" "$pkg"; then
    status=1
  fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v node_modules | sort)
exit $status
