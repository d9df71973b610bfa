package moderation

import (
	"context"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// Bounds of model resolution on label-first accounts.
const (
	// maxModelLabels is the most label versions one model evaluates.
	maxModelLabels = 50
	// labelScanPage and maxLabelScan bound the reads that find labels by
	// name (the store has no name index across policies).
	labelScanPage = 500
	maxLabelScan  = 20_000
	// maxVersionScan bounds the reads that find a label's latest version.
	maxVersionScan = 100_000
)

// target is what a model names: a policy, or label versions.
type target struct {
	name     string
	policy   *domain.Policy
	versions []labelVersion
}

// labelVersion is a version to evaluate and its label's name (the
// category it answers).
type labelVersion struct {
	id    string
	label string
}

// IsOpenAIModel reports whether model is one of OpenAI's moderation model
// names, which tools hard-code, or empty: both mean the account's default.
func IsOpenAIModel(model string) bool {
	return model == "" || strings.HasPrefix(model, "omni-moderation-") || strings.HasPrefix(model, "text-moderation-")
}

// Model name prefixes of label-first accounts.
const (
	labelPrefix = "label:"
	tagPrefix   = "tag:"
)

func modelNotFound(format string, args ...any) error {
	return domain.Errorf(domain.NotFound, format, args...)
}

// resolve finds what model names for the account.
func (s *Service) resolve(ctx context.Context, account *domain.Account, model string) (*target, error) {
	name := model
	if IsOpenAIModel(model) {
		// Read the account, not the key cache's copy: a default set with
		// the CLI applies to the next call.
		a, err := s.stores.Accounts.GetAccount(ctx, account.ID)
		if err != nil {
			return nil, err
		}
		switch {
		case account.Type == domain.AccountPolicyFirst && a.Moderation.PolicyKey != "":
			name = a.Moderation.PolicyKey
		case account.Type == domain.AccountLabelFirst && a.Moderation.Tag != "":
			name = tagPrefix + a.Moderation.Tag
		case account.Type == domain.AccountPolicyFirst:
			return nil, modelNotFound("the model %q needs a default moderation policy: set one with contenteval accounts set ID --moderation-policy KEY", model)
		default:
			return nil, modelNotFound("the model %q needs a default moderation tag: set one with contenteval accounts set ID --moderation-tag NAME", model)
		}
	}
	t := &target{name: name}
	if model != "" {
		t.name = model
	}
	if account.Type == domain.AccountPolicyFirst {
		p, err := s.policies.GetByKey(ctx, account, name)
		if err != nil {
			return nil, domain.DescribeNotFound(err, "the model %q does not exist: no policy has that policyKey", name)
		}
		t.policy = p
		return t, nil
	}
	var err error
	switch {
	case strings.HasPrefix(name, labelPrefix):
		t.versions, err = s.labelVersions(ctx, account, strings.TrimPrefix(name, labelPrefix), "")
	case strings.HasPrefix(name, tagPrefix):
		t.versions, err = s.tagVersions(ctx, account, strings.TrimPrefix(name, tagPrefix))
	default:
		return nil, modelNotFound("the model %q does not exist: name label:<name> or tag:<name>", name)
	}
	if err != nil {
		return nil, err
	}
	if len(t.versions) == 0 {
		return nil, modelNotFound("the model %q does not exist: no evaluable label version", name)
	}
	return t, nil
}

// tagVersions are the latest versions of the labels with the tag name.
func (s *Service) tagVersions(ctx context.Context, account *domain.Account, name string) ([]labelVersion, error) {
	tags, err := s.stores.Tags.ListLabelTags(ctx, account.ID)
	if err != nil {
		return nil, err
	}
	for _, t := range tags {
		if t.Name == name {
			return s.labelVersions(ctx, account, "", t.ID)
		}
	}
	return nil, modelNotFound("the model %q does not exist: no label tag has that name", tagPrefix+name)
}

// labelVersions are the latest versions of the account's enabled,
// unarchived labels named name (when not empty) or having tag tagID.
func (s *Service) labelVersions(ctx context.Context, account *domain.Account, name, tagID string) ([]labelVersion, error) {
	q := domain.LabelQuery{AccountID: account.ID, Limit: labelScanPage}
	if tagID != "" {
		q.TagIDs = []string{tagID}
	}
	var out []labelVersion
	for scanned := 0; scanned < maxLabelScan; {
		page, err := s.stores.Labels.ListLabels(ctx, q)
		if err != nil {
			return nil, err
		}
		scanned += len(page)
		for _, l := range page {
			if l.Disabled || l.ArchivedAt != nil || (name != "" && l.Name != name) {
				continue
			}
			id, err := s.latestVersion(ctx, account, l.ID)
			if err != nil {
				return nil, err
			}
			if id == "" {
				continue
			}
			if len(out) == maxModelLabels {
				return nil, domain.InvalidField("model", "names more than 50 labels")
			}
			out = append(out, labelVersion{id: id, label: l.Name})
		}
		if len(page) < q.Limit {
			break
		}
		last := page[len(page)-1]
		q.After = &domain.LabelCursor{Created: last.Created, ID: last.ID}
	}
	return out, nil
}

// latestVersion is the id of the label's latest version, "" when it has
// none.
func (s *Service) latestVersion(ctx context.Context, account *domain.Account, labelID string) (string, error) {
	var after *domain.LabelVersionCursor
	latest := ""
	const page = 1000
	for scanned := 0; scanned < maxVersionScan; {
		vs, err := s.stores.Versions.ListLabelVersions(ctx, account.ID, labelID, after, page)
		if err != nil {
			return "", err
		}
		scanned += len(vs)
		if len(vs) > 0 {
			v := vs[len(vs)-1]
			latest, after = v.ID, &domain.LabelVersionCursor{Seq: v.SequentialVersion, ID: v.ID}
		}
		if len(vs) < page {
			break
		}
	}
	return latest, nil
}
