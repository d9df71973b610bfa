// Package bench holds the benchmarks the issues ask for and the pieces they
// share: the servers under test (a bare Echo handler and the full contenteval
// server on a temporary SQLite database), a closed-loop HTTP load driver and
// a small log-linear latency histogram. Results live in bench/README.md; run
// them with `make bench`.
package bench
