#!/usr/bin/env bash
# `make bench`: the benchmarks the issues ask for, one section each. Results
# and how to read them: bench/README.md.
#
# To add yours: write a section_<name> function below and append <name> to
# SECTIONS. `BENCH=http make bench` (comma-separated) runs only those sections.
set -euo pipefail
cd "$(dirname "$0")/.."

# section_http: the authenticated, validated cheap GET through the
# full middleware path versus a bare Echo handler, in one process.
#   HTTPLOAD_FLAGS  flags for bench/cmd/httpload (default: -c 16 -d 3s -warmup 1s -rounds 9)
#   BENCHTIME       -benchtime of the Go benchmarks (default 3s)
section_http() {
  # shellcheck disable=SC2086 # HTTPLOAD_FLAGS is a list of flags
  go run ./bench/cmd/httpload ${HTTPLOAD_FLAGS:-}
  go test -run '^$' -bench 'BenchmarkBareEcho|BenchmarkFullPathCheapGET' -benchtime "${BENCHTIME:-3s}" ./bench/
}

# section_labelhits: one 1,000-hit page of GET /v1/jobs/{jobUuid}/labels
# from a job holding 100,000 hits, through the whole HTTP stack, on SQLite and
# (when CONTENTEVAL_TEST_DATABASE_URL is set) PostgreSQL; target p99 < 25 ms.
# Results: bench/results/labelhits.md.
#   LABELHITS_FLAGS  flags for bench/cmd/labelhits (default: -n 1000 -hits 100000)
section_labelhits() {
  # shellcheck disable=SC2086 # LABELHITS_FLAGS is a list of flags
  go run ./bench/cmd/labelhits ${LABELHITS_FLAGS:-} || echo "bench/run.sh: labelhits missed its p99 target (see above)" >&2
}

# section_batch: a 25,000-item text batch on PostgreSQL through the
# release binary, upload to COMPLETED; target >= 1,000 items/s, peak RSS <= 300 MB.
# Needs CONTENTEVAL_TEST_DATABASE_URL. Results: bench/results/batch.md.
#   CONTENTEVAL_BENCH_BATCH_ITEMS, CONTENTEVAL_BENCH_JOB_WORKERS  size and workers
section_batch() {
  if [[ -z "${CONTENTEVAL_TEST_DATABASE_URL:-}" ]]; then
    echo "bench/run.sh: batch needs CONTENTEVAL_TEST_DATABASE_URL (PostgreSQL)" >&2
    return 0
  fi
  CONTENTEVAL_BENCH_BATCH=1 go test -count=1 -run '^TestBatchThroughput$' -v -timeout 20m ./cmd/contenteval/ | grep -E 'items/s|first seen|^(ok|FAIL|---)'
}

# section_jobs: POST /v1/jobs with waitForCompletion, one 1 KiB text item,
# a 20-label policy, through the release binary: peak (closed loop) and p99 at half the
# peak (open loop) on SQLite and, when CONTENTEVAL_TEST_DATABASE_URL is set, PostgreSQL,
# then pgbench's single-row INSERT rate. Results: bench/results/jobs.md.
#   JOBSLOAD_FLAGS  flags for bench/cmd/jobsload (default: -c 32 -d 10s -half-d 30s -warmup 2s)
section_jobs() {
  # shellcheck disable=SC2086 # JOBSLOAD_FLAGS is a list of flags
  go run ./bench/cmd/jobsload ${JOBSLOAD_FLAGS:--c 32 -d 10s -half-d 30s -warmup 2s}
}

# section_grpc: CreateJob over gRPC against POST /v1/jobs over REST, waitForCompletion,
# one 1 KiB text item, the 20-label policy, on one binary (SQLite) and one port; rounds alternate
# the protocols; target: gRPC's peak >= 90% of REST's. Results: bench/results/grpc.md.
#   GRPCLOAD_FLAGS  flags for bench/cmd/grpcload (default: -c 32 -d 10s -rounds 5)
section_grpc() {
  # shellcheck disable=SC2086 # GRPCLOAD_FLAGS is a list of flags
  go run ./bench/cmd/grpcload ${GRPCLOAD_FLAGS:--c 32 -d 10s -rounds 5}
}

# section_joblist: GET /v1/jobs?pageSize=1000 over 1,000 completed jobs, which
# now carry their results, against a baseline build without them, both serving the same database,
# rounds alternating; SQLite and (with CONTENTEVAL_TEST_DATABASE_URL) PostgreSQL.
# Results: bench/results/joblist.md.
#   JOBLIST_BASE   baseline git revision (default fe33a6b, the commit before the change)
#   JOBLIST_FLAGS  more flags for bench/cmd/joblist (default: -n 10 -rounds 5)
# section_moderation: the OpenAI-compatible POST /v1/moderations against POST /v1/jobs,
# the same 1 KiB text and 20-label policy (the moderation's model is its policyKey), both
# recording the same job, on one binary (SQLite); rounds alternate; target: within 10% of
# POST /v1/jobs. Results: bench/results/moderation.md.
#   MODERATIONLOAD_FLAGS  flags for bench/cmd/grpcload (default: -c 16 -d 10s -rounds 5)
section_moderation() {
  # shellcheck disable=SC2086 # MODERATIONLOAD_FLAGS is a list of flags
  go run ./bench/cmd/grpcload -vs moderation ${MODERATIONLOAD_FLAGS:--c 16 -d 10s -rounds 5}
}

section_joblist() {
  # shellcheck disable=SC2086 # JOBLIST_FLAGS is a list of flags
  go run ./bench/cmd/joblist -base "${JOBLIST_BASE:-fe33a6b}" ${JOBLIST_FLAGS:--n 10 -rounds 5}
}

# section_model: the model backend path against fake model servers speaking HTTP:
# (a) per-item overhead with a 0 ms fake vs the built-in path, (b) async items/s with a 50 ms
# fake and maxConcurrency 16 against the bound, (c) backend calls per item with and without the
# cache. Results: bench/results/model.md.
section_model() {
  # shellcheck disable=SC2086 # MODELLOAD_FLAGS is a list of flags
  go run ./bench/cmd/modelload ${MODELLOAD_FLAGS:-}
}

# section_quality: dataset runs of a 20-rule label over 10,000 text examples
# (target >= 2,000 examples/s on SQLite), and synchronous job latency with and without
# a shadow version at sample rate 1 in alternating open-loop rounds (target: within 5%).
# Results: bench/results/quality.md.
#   QUALITYLOAD_FLAGS  flags for bench/cmd/qualityload (default: -runs 3 -rate 100 -d 10s -rounds 12)
section_quality() {
  # shellcheck disable=SC2086 # QUALITYLOAD_FLAGS is a list of flags
  go run ./bench/cmd/qualityload ${QUALITYLOAD_FLAGS:--runs 3 -rate 100 -d 10s -rounds 12}
}

# section_console: the review console in headless Chromium: the compressed JavaScript
# of the first load of /console/ (target < 300 KB) and the page of a job with 1,000 label hits
# (target < 1 s), against a 1-hit job. Needs chromium (make browser-tools), node_modules and
# ffmpeg. Results: bench/results/console.md.
section_console() {
  CONTENTEVAL_BENCH_CONSOLE=1 go test -count=1 -run '^TestConsoleBench$' -v -timeout 20m ./cmd/contenteval/ | grep -vE '^(=== RUN|PASS$)'
}

SECTIONS=(http jobs labelhits batch grpc moderation joblist model quality console)

all=$(IFS=,; echo "${SECTIONS[*]}")
IFS=, read -r -a wanted <<<"${BENCH:-$all}"
for name in "${wanted[@]}"; do
  if ! declare -F "section_$name" >/dev/null; then
    echo "bench/run.sh: no section '$name' (have: ${SECTIONS[*]})" >&2
    exit 2
  fi
  printf '\n=== bench: %s\n' "$name"
  "section_$name"
done
