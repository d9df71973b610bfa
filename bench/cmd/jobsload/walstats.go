package main

import (
	"context"
	"fmt"

	"github.com/contenteval/contenteval/persistence"
)

// walStats is what PostgreSQL's cumulative statistics say of its WAL: the
// bytes written, the flushes (fdatasync) and the checkpoints begun. A
// checkpoint, or a new WAL segment created while a commit waits, shows in
// the half-peak p99 as a stall; these counters say whether the phase had
// one, so that a slow run is explained rather than guessed at.
type walStats struct {
	bytes, syncs, checkpoints int64
	ok                        bool
}

// readWAL reads the counters (pg_stat_wal: PostgreSQL 14+; checkpoints
// from pg_stat_bgwriter, or pg_stat_checkpointer on 17+). Any failure
// leaves ok false: the counters are a diagnosis, not a result.
func readWAL(ctx context.Context, db *persistence.DB) walStats {
	if db == nil {
		return walStats{}
	}
	var w walStats
	if err := db.QueryRowContext(ctx, `SELECT wal_bytes::bigint, wal_sync FROM pg_stat_wal`).Scan(&w.bytes, &w.syncs); err != nil {
		return walStats{}
	}
	for _, q := range []string{
		`SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter`,
		`SELECT num_timed + num_requested FROM pg_stat_checkpointer`,
	} {
		if db.QueryRowContext(ctx, q).Scan(&w.checkpoints) == nil {
			w.ok = true
			return w
		}
	}
	return walStats{}
}

// walPerRequest is the WAL of one phase, per request.
type walPerRequest struct {
	bytesPerReq, syncsPerReq float64
	checkpoints              int64
	ok                       bool
}

func (w walStats) since(before walStats, requests uint64) walPerRequest {
	if !w.ok || !before.ok || requests == 0 {
		return walPerRequest{}
	}
	n := float64(requests)
	return walPerRequest{bytesPerReq: float64(w.bytes-before.bytes) / n, syncsPerReq: float64(w.syncs-before.syncs) / n,
		checkpoints: w.checkpoints - before.checkpoints, ok: true}
}

func (w walPerRequest) String() string {
	return fmt.Sprintf("WAL %.1f KiB and %.2f flushes per request, %d checkpoint(s) begun", w.bytesPerReq/1024, w.syncsPerReq, w.checkpoints)
}
