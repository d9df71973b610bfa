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
// limit, the operation's roles and its account type (empty: any), in that
// order, so a caller learns first who it is, then how fast, then what it may
// call. A call over its rate gets RESOURCE_EXHAUSTED and wait, the time
// before a retry may succeed (0 for every other refusal). The caller is
// returned once the key is authenticated, also with a later refusal, so
// that it can be logged. Codes: UNAUTHENTICATED, RESOURCE_EXHAUSTED,
// PERMISSION_DENIED, FAILED_PRECONDITION.
func Admit(ctx context.Context, keys *KeyService, limiter *RateLimiter, authorization, operation string, roles RoleSet, accountType domain.AccountType) (caller Caller, wait time.Duration, err error) {
	token, ok := bearerToken(authorization)
	if !ok {
		return Caller{}, 0, domain.Errorf(domain.Unauthenticated, "missing, malformed, expired or revoked API key")
	}
	caller, err = keys.AuthenticateCaller(ctx, token)
	if err != nil {
		return Caller{}, 0, err
	}
	if wait, err := limiter.Allow(caller.Account); err != nil {
		return caller, wait, err
	}
	if !roles.Has(caller.Role) {
		return caller, 0, domain.Errorf(domain.PermissionDenied,
			"%s is not available to %s keys", operation, caller.Role)
	}
	if accountType != "" && caller.Account.Type != accountType {
		return caller, 0, domain.Errorf(domain.FailedPrecondition,
			"%s is only available to %s accounts; this account is %s", operation, accountType, caller.Account.Type)
	}
	return caller, 0, nil
}

// RoleSet is the key roles an operation admits.
type RoleSet uint8

// Roles returns the set of rs.
func Roles(rs ...domain.KeyRole) RoleSet {
	var s RoleSet
	for _, r := range rs {
		s |= roleBit(r)
	}
	return s
}

// Has reports whether r is in s.
func (s RoleSet) Has(r domain.KeyRole) bool { return s&roleBit(r) != 0 }

func roleBit(r domain.KeyRole) RoleSet {
	for i, k := range domain.KeyRoles {
		if k == r {
			return 1 << i
		}
	}
	return 0
}

// The role sets of docs/api.md#key-roles. Reviewer keys call the review
// endpoints, and read the jobs their items point to (ReadOrReview: the
// handler checks that an item points to the job).
var (
	AdminOnly      = Roles(domain.RoleAdmin)
	EvaluateOrRead = Roles(domain.RoleAdmin, domain.RoleAPI)
	Review         = Roles(domain.RoleAdmin, domain.RoleReviewer)
	ReadOrReview   = Roles(domain.RoleAdmin, domain.RoleAPI, domain.RoleReviewer)
)

func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// CheckSignature is the part of Admit that needs no store: a bearer key is
// present, signed by this server and not expired. A transport refuses what
// fails it before reading the request. Codes: UNAUTHENTICATED.
func CheckSignature(keys *KeyService, authorization string) error {
	token, ok := bearerToken(authorization)
	if !ok {
		return errUnauthenticated
	}
	vt, err := keys.verify(token)
	if err != nil {
		return err
	}
	if vt.expires != nil && !keys.clock.Now().Before(*vt.expires) {
		return errUnauthenticated
	}
	return nil
}
