package quality

import (
	"context"
	"log/slog"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/policies"
)

// Config are the limits of the quality service.
type Config struct {
	// MaxTextBytes bounds an example's text (the jobs' limit, 256 KiB).
	MaxTextBytes int
	// ChunkSize is how many examples of a dataset run one queued job
	// evaluates (250): large enough that the queue's per-job costs (a
	// claim, a lease, a finishing transaction) are spread over many
	// examples, small enough that a run spreads over the workers and a
	// restart redoes little.
	ChunkSize int
}

// Deps are the stores and services the quality service works with.
type Deps struct {
	Datasets domain.DatasetStore
	Metrics  domain.QualityMetricsStore
	Shadows  domain.ShadowStore
	// JobStore reads the live jobs shadow versions evaluate.
	JobStore domain.JobStore
	Labels   domain.LabelStore
	Versions domain.LabelVersionStore
	Policies *policies.Service
	// Jobs is the queue: the service registers its tasks with it and wakes
	// its workers when it queues work.
	Jobs *jobs.Service
	// Images prechecks image examples on creation; nil refuses them.
	Images domain.ImageInspector
	// FetchImage fetches an example's imageUrl under the URL rules
	// (docs/api.md#url-fetching); nil refuses image URLs.
	FetchImage func(ctx context.Context, url string) ([]byte, error)
	Clock      domain.Clock
	Tokens     *paging.Tokens
	Log        *slog.Logger
	// Backends score the model signals of dataset runs (the label
	// version's stack) and shadow evaluations (the live job's stack); nil:
	// the built-in evaluators only.
	Backends domain.SignalBackends
	// Plans is the server's cache of compiled plans (nil: one of this
	// service's own).
	Plans *evaluation.Plans
}

// Service serves dataset examples and runs, live metrics and shadow
// versions, and runs the internal jobs of runs and shadows.
type Service struct {
	d     Deps
	cfg   Config
	plans *evaluation.Plans
}

// NewService returns the service and registers its tasks with d.Jobs.
func NewService(d Deps, cfg Config) *Service {
	if cfg.MaxTextBytes <= 0 {
		cfg.MaxTextBytes = 256 << 10
	}
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = 250
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Plans == nil {
		d.Plans = evaluation.NewPlans(256)
	}
	s := &Service{d: d, cfg: cfg, plans: d.Plans}
	if d.Jobs != nil {
		d.Jobs.HandleType(domain.JobTypeDatasetRun, s.runChunk)
		d.Jobs.HandleBackgroundGroup(domain.JobTypeShadow, s.runShadows)
	}
	return s
}
