package persistence

import (
	"context"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// ExplainVersionMetrics returns the plans of every query VersionMetrics
// runs for q (see explain), each after its text, in the order it runs
// them.
func (s *QualityMetrics) ExplainVersionMetrics(ctx context.Context, q domain.MetricsQuery) ([]string, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	if s.db.Dialect == Postgres {
		if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return nil, err
		}
	}
	p := &planQuerier{tx: tx, dialect: s.db.Dialect}
	if _, err := (&QualityMetrics{db: s.db, q: p}).VersionMetrics(ctx, q); err != nil {
		return nil, err
	}
	return p.plans, nil
}

// planQuerier runs the queries in tx, each first explained into plans.
type planQuerier struct {
	tx      *sqlx.Tx
	dialect Dialect
	plans   []string
}

func (p *planQuerier) explain(ctx context.Context, query string, args []any) error {
	prefix := "EXPLAIN "
	if p.dialect == SQLite {
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := p.tx.QueryxContext(ctx, prefix+query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		cols, err := rows.SliceScan()
		if err != nil {
			return err
		}
		// SQLite's rows are id, parent, notused, detail.
		if s, ok := cols[len(cols)-1].(string); ok {
			plan = append(plan, s)
		} else if b, ok := cols[len(cols)-1].([]byte); ok {
			plan = append(plan, string(b))
		}
	}
	p.plans = append(p.plans, query+"\n"+strings.Join(plan, "\n"))
	return rows.Err()
}

func (p *planQuerier) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	if err := p.explain(ctx, query, args); err != nil {
		return err
	}
	return p.tx.SelectContext(ctx, dest, query, args...)
}

func (p *planQuerier) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	if err := p.explain(ctx, query, args); err != nil {
		return err
	}
	return p.tx.GetContext(ctx, dest, query, args...)
}

func (p *planQuerier) Rebind(query string) string { return p.tx.Rebind(query) }
