package main

import (
	"context"
	"fmt"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
)

// accountSettings are the flags of accounts set.
type accountSettings struct {
	retention, moderationPolicy, moderationTag string
}

// setAccount applies the flags given to accounts set: the history
// retention, and the default moderation policy or tag that the
// OpenAI-compatible endpoint evaluates for OpenAI's model names
// (docs/api.md#openai-compatible-moderation).
func setAccount(ctx context.Context, m *Main, out *printer, positional []string, given map[string]bool, s accountSettings) error {
	if !given["moderation-policy"] && !given["moderation-tag"] {
		return setAccountRetention(ctx, m, out, positional, given, s.retention)
	}
	if len(positional) != 1 {
		return usageError("want: accounts set ID [--retention D] [--moderation-policy KEY] [--moderation-tag NAME]")
	}
	var keep time.Duration
	if given["retention"] {
		if err := parseRetention(&keep, s.retention); err != nil {
			return err
		}
	}
	id := positional[0]
	acct, err := m.Accounts.GetAccount(ctx, id)
	if err != nil {
		return err
	}
	if given["moderation-policy"] && s.moderationPolicy != "" {
		if _, err := m.Policies.GetByKey(ctx, acct, s.moderationPolicy); err != nil {
			return domain.DescribeNotFound(err, "account %s has no policy with key %q", id, s.moderationPolicy)
		}
	}
	if given["moderation-tag"] && s.moderationTag != "" {
		if err := hasLabelTag(ctx, m, id, s.moderationTag); err != nil {
			return err
		}
	}
	a, err := m.Accounts.UpdateAccount(ctx, id, func(a *domain.Account) error {
		if given["retention"] {
			a.Retention = keep
		}
		if given["moderation-policy"] {
			a.Moderation.PolicyKey = s.moderationPolicy
		}
		if given["moderation-tag"] {
			a.Moderation.Tag = s.moderationTag
		}
		a.Updated = m.Clock.Now()
		return nil
	})
	if err != nil {
		return err
	}
	return out.object(map[string]any{
		"accountId": a.ID, "retentionDays": retentionDays(a.Retention),
		"moderationPolicy": a.Moderation.PolicyKey, "moderationTag": a.Moderation.Tag,
	}, fmt.Sprintf("account %s: default moderation policy %q, tag %q", a.ID, a.Moderation.PolicyKey, a.Moderation.Tag))
}

// hasLabelTag fails unless the account has a label tag named name.
func hasLabelTag(ctx context.Context, m *Main, accountID, name string) error {
	tags, err := persistence.NewLabelTags(m.DB).ListLabelTags(ctx, accountID)
	if err != nil {
		return err
	}
	for _, t := range tags {
		if t.Name == name {
			return nil
		}
	}
	return domain.Errorf(domain.NotFound, "account %s has no label tag named %q", accountID, name)
}
