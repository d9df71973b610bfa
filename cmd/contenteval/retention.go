package main

// History retention (docs/operations.md, "Retention"): the settings, the
// background sweep of roles all and worker, its metrics, and
// `accounts set --retention`.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/retention"
	"github.com/contenteval/contenteval/persistence"
)

var retentionSettings = []setting{
	{"retention", "CONTENTEVAL_RETENTION", "30d", "how long evaluation history (jobs, results, hits, feedback, shadow results, batches and their files) is kept: 30d, 12h, 90s or plain seconds; 0 keeps everything; an account may set a shorter one", func(c *Config, v string) error {
		return parseRetention(&c.Retention, v)
	}, true},
	{"retention-interval", "CONTENTEVAL_RETENTION_INTERVAL", "1h", "time between two retention sweeps (roles all and worker; one replica sweeps at a time)", func(c *Config, v string) error {
		if err := parseRetention(&c.RetentionInterval, v); err != nil {
			return err
		}
		if c.RetentionInterval <= 0 {
			return errors.New("must be positive")
		}
		return nil
	}, true},
}

func init() { settings = append(settings, retentionSettings...) }

// parseRetention reads a retention: Nd (days), a Go duration (12h, 90s)
// or plain seconds. 0 means keep everything.
func parseRetention(dst *time.Duration, v string) error {
	bad := fmt.Errorf("%q is not a retention such as 30d, 12h, 90s or 0", v)
	v = strings.TrimSpace(v)
	var d time.Duration
	switch {
	case strings.HasSuffix(v, "d"):
		n, err := strconv.ParseInt(strings.TrimSuffix(v, "d"), 10, 64)
		if err != nil || n < 0 || n > 100*365 {
			return bad
		}
		d = time.Duration(n) * 24 * time.Hour
	default:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			if n < 0 || n > 100*365*24*3600 {
				return bad
			}
			d = time.Duration(n) * time.Second
			break
		}
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 0 {
			return bad
		}
	}
	*dst = d
	return nil
}

// retentionDays is d in days for the CLI's JSON (fractional below a day).
func retentionDays(d time.Duration) float64 {
	return d.Hours() / 24
}

// openRetention builds the sweep and registers its metrics.
func (m *Main) openRetention() {
	m.Retention = retention.NewService(retention.Deps{
		Store: persistence.NewRetention(m.DB), Accounts: m.Accounts, Blobs: m.Blobs, Clock: m.Clock, Log: m.Log,
		Owner: m.Jobs.Owner(), Yield: m.Jobs.YieldToLive, ReviewContent: persistence.NewReview(m.DB),
	}, retention.Config{Retention: m.Config.Retention, Interval: m.Config.RetentionInterval})
	stats := m.Retention.Stats()
	m.Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "contenteval_retention_rows_deleted_total",
			Help: "History rows this process's retention sweeps deleted (partitions dropped count their rows)."},
			func() float64 { return float64(stats.RowsDeleted.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "contenteval_retention_partitions_dropped_total",
			Help: "Day partitions of history this process's retention sweeps dropped (PostgreSQL)."},
			func() float64 { return float64(stats.PartitionsDropped.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "contenteval_retention_partitions_created_total",
			Help: "Day partitions this process's retention sweeps created ahead of time (PostgreSQL)."},
			func() float64 { return float64(stats.PartitionsCreated.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "contenteval_retention_sweeps_total",
			Help: "Retention sweeps this process ran to the end."},
			func() float64 { return float64(stats.Sweeps.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "contenteval_retention_oldest_retained_day_timestamp_seconds",
			Help: "Start (UTC) of the day of the oldest stored job, as of this process's last sweep; 0 before one or with no jobs."},
			func() float64 { return float64(stats.OldestRetained.Load()) }),
	)
	if m.serving {
		if m.Config.Retention == 0 {
			m.Log.Info("history retention: 0, evaluation history is kept forever", "interval", m.Config.RetentionInterval.String())
		} else {
			m.Log.Info("history retention", "retention", m.Config.Retention.String(),
				"days", retentionDays(m.Config.Retention), "interval", m.Config.RetentionInterval.String())
		}
	}
}

// partitionsBeforeListen bounds how long a start waits to make the day
// partitions; what is left, the first sweep makes.
const partitionsBeforeListen = 15 * time.Second

// preparePartitions makes the coming days' partitions before the server
// listens (docs/operations.md, "Retention"). Failing is not fatal: rows of
// a day without its partition wait in the default partition.
func (m *Main) preparePartitions(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, partitionsBeforeListen)
	defer cancel()
	created, err := m.Retention.EnsurePartitions(ctx)
	if err != nil {
		m.Log.Warn("day partitions not all made before listening; the first sweep makes the rest", "error", err.Error())
		return
	}
	if created > 0 {
		m.Log.Info("day partitions made", "created", created)
	}
}

// runRetention sweeps in the background (roles all and worker).
func (m *Main) runRetention(ctx context.Context) {
	m.workers.Add(1)
	go func() {
		defer m.workers.Done()
		m.Retention.Run(ctx)
	}()
}

// setAccountRetention is `accounts set ID --retention D`: the account's
// own retention, 0 for the server's.
func setAccountRetention(ctx context.Context, m *Main, out *printer, positional []string, given map[string]bool, value string) error {
	if len(positional) != 1 || !given["retention"] {
		return usageError("want: accounts set ID --retention D (30d, 12h, 90s; 0: the server's)")
	}
	var d time.Duration
	if err := parseRetention(&d, value); err != nil {
		return err
	}
	a, err := m.Accounts.UpdateAccount(ctx, positional[0], func(a *domain.Account) error {
		a.Retention = d
		a.Updated = m.Clock.Now()
		return nil
	})
	if err != nil {
		return err
	}
	text := fmt.Sprintf("account %s keeps its history %g days (the server's retention when shorter)", a.ID, retentionDays(a.Retention))
	if a.Retention == 0 {
		text = fmt.Sprintf("account %s keeps its history as long as the server's retention", a.ID)
	}
	return out.object(map[string]any{"accountId": a.ID, "retentionDays": retentionDays(a.Retention)}, text)
}
