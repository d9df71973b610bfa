package access

import (
	"context"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// Admit decides whether a call may go on, the same way for every API (REST
// and gRPC): it authenticates the bearer key of authorization (the
// Authorization header or metadata as sent), applies the account's rate
// limit and the operation's account type (empty: any), in that order, so a
// caller learns first who it is, then how fast, then what it may call. A
// call over its rate gets RESOURCE_EXHAUSTED and wait, the time before a
// retry may succeed (0 for every other refusal). account is returned once
// the key is authenticated, also with a later refusal, so that it can be
// logged. Codes: UNAUTHENTICATED,
// RESOURCE_EXHAUSTED, FAILED_PRECONDITION.
func Admit(ctx context.Context, keys *KeyService, limiter *RateLimiter, authorization, operation string, accountType domain.AccountType) (account *domain.Account, wait time.Duration, err error) {
	token, ok := bearerToken(authorization)
	if !ok {
		return nil, 0, domain.Errorf(domain.Unauthenticated, "missing, malformed, expired or revoked API key")
	}
	account, err = keys.Authenticate(ctx, token)
	if err != nil {
		return nil, 0, err
	}
	if wait, err := limiter.Allow(account); err != nil {
		return account, wait, err
	}
	if accountType != "" && account.Type != accountType {
		return account, 0, domain.Errorf(domain.FailedPrecondition,
			"%s is only available to %s accounts; this account is %s", operation, accountType, account.Type)
	}
	return account, 0, nil
}

func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
