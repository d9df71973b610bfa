package persistence

// The jobs a task left held when it ended, given back to the queue: the
// worker's guarantee that no claimed job stays running without one.

import (
	"context"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// ReleaseClaims returns to the queue the claims still running under the
// very claim that took them (domain.JobStore.ReleaseClaims). A claim is
// known by its owner, attempts and yields: a claim adds one to attempts
// and a yield takes it off again while adding one to yields, so every
// later claim of the job has another pair. The common case, every job
// ended by its task, costs one read and no write. Codes: UNAVAILABLE,
// CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) ReleaseClaims(ctx context.Context, claims []*domain.Job, now time.Time) ([]string, error) {
	if len(claims) == 0 {
		return nil, nil
	}
	held, err := s.stillClaimed(ctx, claims)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	now = StoredTime(now)
	var released []string
	err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		released = released[:0]
		for _, j := range held {
			res, err := tx.ExecContext(ctx, tx.Rebind(`
				UPDATE jobs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL, updated = ?
				WHERE id = ? AND status = 'running' AND lease_owner = ? AND attempts = ? AND yields = ?`),
				now, j.ID, j.LeaseOwner, j.Attempts, j.Yields)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n > 0 {
				released = append(released, j.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return released, nil
}

// stillClaimed returns those of claims whose job is running under them,
// by a read that takes no lock.
func (s *Jobs) stillClaimed(ctx context.Context, claims []*domain.Job) ([]*domain.Job, error) {
	args := make([]any, 0, len(claims))
	for _, j := range claims {
		args = append(args, j.ID)
	}
	var rows []struct {
		ID       string  `db:"id"`
		Owner    *string `db:"lease_owner"`
		Attempts int     `db:"attempts"`
		Yields   int     `db:"yields"`
	}
	q := `SELECT id, lease_owner, attempts, yields FROM jobs WHERE status = 'running' AND id IN (?` +
		strings.Repeat(", ?", len(claims)-1) + `)`
	if err := s.db.SelectContext(ctx, &rows, s.db.Rebind(q), args...); err != nil {
		return nil, TranslateError(err)
	}
	var held []*domain.Job
	for _, r := range rows {
		for _, j := range claims {
			if j.ID == r.ID && r.Owner != nil && *r.Owner == j.LeaseOwner && r.Attempts == j.Attempts && r.Yields == j.Yields {
				held = append(held, j)
			}
		}
	}
	return held, nil
}
