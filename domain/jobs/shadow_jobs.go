package jobs

import (
	"context"
	"encoding/json"
	"math/rand/v2"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// Shadow evaluations (docs/api.md#extension-endpoints): a completed job of a policy with a
// shadow version may be followed by a job of type shadow, queued in the
// transaction that records the completion (domain.Job.Then), which
// evaluates the job's content with the shadow version later, from the
// queue. Nothing in the live job's path waits for it.

// shadowJob returns the shadow job following j when j's policy has a
// shadow version (versionID) and j falls in its sample (rate); nil
// otherwise.
func shadowJob(versionID string, rate float64, j *domain.Job, s *Service) *domain.Job {
	if versionID == "" || versionID == j.PolicyVersionID || j.PolicyID == "" || j.Type.Internal() {
		return nil
	}
	if rate < 1 && rand.Float64() >= rate {
		return nil
	}
	now := s.clock.Now()
	return &domain.Job{
		ID: domain.NewIDAt(now), AccountID: j.AccountID, Type: domain.JobTypeShadow, Status: domain.JobPending,
		PolicyID: j.PolicyID, PolicyKey: j.PolicyKey, PolicyVersionID: versionID, Threshold: j.Threshold,
		Options: map[string]string{domain.ShadowOfOption: j.ID},
		Input:   []domain.ContentItem{}, Contents: []domain.ContentSummary{}, Created: now, Updated: now,
	}
}

// queuedShadow sets the shadow job of a queued job, whose policy is read
// by the worker (prepare sets it for the jobs a request runs). A failed
// read costs the sample, never the job.
func (s *Service) queuedShadow(ctx context.Context, j *domain.Job) {
	versionID, rate, err := s.policies.Shadow(ctx, j.AccountID, j.PolicyID)
	if err != nil {
		s.log.Warn("reading the shadow version of a job's policy", "job", j.ID, "error", err.Error())
		return
	}
	if sj := shadowJob(versionID, rate, j, s); sj != nil {
		j.Then = []*domain.Job{sj}
	}
}

// withActive returns then with the live results' outcomes recorded in the
// shadow jobs among them, when the live job completes.
func withActive(then []*domain.Job, results []*domain.JobResult) []*domain.Job {
	if len(then) == 0 {
		return nil
	}
	active := EncodeShadowActive(results)
	out := make([]*domain.Job, len(then))
	for i, t := range then {
		if t.Type != domain.JobTypeShadow {
			out[i] = t
			continue
		}
		c := *t
		c.Options = map[string]string{domain.ShadowActiveOption: active}
		for k, v := range t.Options {
			if k != domain.ShadowActiveOption {
				c.Options[k] = v
			}
		}
		out[i] = &c
	}
	return out
}

// EncodeShadowActive is the domain.ShadowActiveOption of a completed job's results.
func EncodeShadowActive(results []*domain.JobResult) string {
	out := make([]domain.ShadowActive, len(results))
	for i, r := range results {
		out[i] = domain.ShadowActive{ResultID: r.ID, ContentHash: r.ContentHash}
		if r.Report == nil {
			continue
		}
		for _, sec := range r.Report.Sections {
			if sec.Result != rules.OutcomeFalse {
				if out[i].Outcomes == nil {
					out[i].Outcomes = map[string]rules.Outcome{}
				}
				out[i].Outcomes[sec.Name] = sec.Result
			}
		}
	}
	b, _ := json.Marshal(out) // strings and maps of strings: cannot fail
	return string(b)
}

// DecodeShadowActive reads a domain.ShadowActiveOption.
func DecodeShadowActive(s string) ([]domain.ShadowActive, error) {
	var out []domain.ShadowActive
	return out, json.Unmarshal([]byte(s), &out)
}
