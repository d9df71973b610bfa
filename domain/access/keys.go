package access

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// TokenIssuer is the `iss` claim of every API key the server signs.
const TokenIssuer = "contenteval"

// KeyService issues and verifies API keys: EdDSA-signed JWTs whose `jti` is
// the id of a row in the KeyStore, so a key can be revoked without rotating
// the signing key.
type KeyService struct {
	keys     domain.KeyStore
	accounts domain.AccountStore
	clock    domain.Clock
	private  ed25519.PrivateKey
	public   ed25519.PublicKey
	parser   *jwt.Parser
	// cacheTTL bounds how long a revocation or account change made by another
	// process (the CLI, another replica) can go unnoticed.
	cacheTTL time.Duration
	cache    sync.Map // key id -> cachedKey
	// verified remembers tokens whose signature already checked out: the
	// Ed25519 verification is most of the cost of a cheap request. Expiry,
	// revocation and the account are still checked on every request.
	verified  sync.Map // sha256(token) -> verifiedToken
	verifiedN atomic.Int64
	maxTokens int64
}

type verifiedToken struct {
	subject, keyID string
	expires        *time.Time
}

type cachedKey struct {
	key     *domain.APIKey
	account *domain.Account
	fetched time.Time
}

// NewKeyService returns a KeyService signing with private. cacheTTL is how
// long a verified key and its account are reused before the stores are read
// again (0 disables the cache).
func NewKeyService(keys domain.KeyStore, accounts domain.AccountStore, private ed25519.PrivateKey, clock domain.Clock, cacheTTL time.Duration) *KeyService {
	return &KeyService{
		keys: keys, accounts: accounts, clock: clock, cacheTTL: cacheTTL,
		private: private, public: private.Public().(ed25519.PublicKey), maxTokens: 10000,
		parser: jwt.NewParser(
			jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
			jwt.WithIssuer(TokenIssuer),
			jwt.WithTimeFunc(clock.Now),
		),
	}
}

// DeriveSecret returns a secret for purpose derived from the signing key, so
// every replica that shares the key file also shares page-token and URL
// signing secrets without more configuration.
func (s *KeyService) DeriveSecret(purpose string) []byte {
	m := hmac.New(sha256.New, s.private.Seed())
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// Issue creates a key for the account and returns it with its signed token.
// ttl 0 means the key does not expire. Codes: NOT_FOUND (account),
// INVALID_ARGUMENT (negative ttl).
func (s *KeyService) Issue(ctx context.Context, accountID, name string, ttl time.Duration) (*domain.APIKey, string, error) {
	if ttl < 0 {
		return nil, "", domain.InvalidField("ttl", "must not be negative")
	}
	if _, err := s.accounts.GetAccount(ctx, accountID); err != nil {
		return nil, "", err
	}
	now := s.clock.Now().Truncate(time.Second)
	k := &domain.APIKey{ID: uuid.NewString(), AccountID: accountID, Name: name, Created: now}
	claims := jwt.RegisteredClaims{
		Issuer: TokenIssuer, Subject: accountID, ID: k.ID, IssuedAt: jwt.NewNumericDate(now),
	}
	if ttl > 0 {
		exp := now.Add(ttl)
		k.ExpiresAt = &exp
		claims.ExpiresAt = jwt.NewNumericDate(exp)
	}
	token, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims).SignedString(s.private)
	if err != nil {
		return nil, "", err
	}
	if err := s.keys.CreateKey(ctx, k); err != nil {
		return nil, "", err
	}
	return k, token, nil
}

var errUnauthenticated = &domain.Error{Code: domain.Unauthenticated, Message: "missing, malformed, expired or revoked API key"}

// Authenticate verifies a bearer token (signature, issuer, expiry, that its
// key exists, is not revoked and belongs to the token's subject) and returns
// the account it identifies. Codes: UNAUTHENTICATED; UNAVAILABLE or INTERNAL
// when the stores fail.
func (s *KeyService) Authenticate(ctx context.Context, token string) (*domain.Account, error) {
	if token == "" {
		return nil, errUnauthenticated
	}
	vt, err := s.verify(token)
	if err != nil {
		return nil, err
	}
	if vt.expires != nil && !s.clock.Now().Before(*vt.expires) {
		return nil, errUnauthenticated
	}
	key, account, err := s.lookup(ctx, vt.keyID)
	if err != nil {
		if domain.ErrorCode(err) == domain.NotFound {
			return nil, errUnauthenticated
		}
		return nil, err
	}
	now := s.clock.Now()
	if key.RevokedAt != nil || key.AccountID != vt.subject || (key.ExpiresAt != nil && !now.Before(*key.ExpiresAt)) {
		return nil, errUnauthenticated
	}
	return account, nil
}

// verify checks a token's signature and claims once and remembers the
// result; the cache is bounded (cleared when full: tokens are few and long
// lived, so it refills with the ones in use).
func (s *KeyService) verify(token string) (verifiedToken, error) {
	sum := sha256.Sum256([]byte(token))
	if v, ok := s.verified.Load(sum); ok {
		return v.(verifiedToken), nil
	}
	var claims jwt.RegisteredClaims
	if _, err := s.parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return s.public, nil }); err != nil {
		return verifiedToken{}, errUnauthenticated
	}
	vt := verifiedToken{subject: claims.Subject, keyID: claims.ID}
	if claims.ExpiresAt != nil {
		exp := claims.ExpiresAt.Time
		vt.expires = &exp
	}
	if s.verifiedN.Add(1) > s.maxTokens {
		s.verified.Clear()
		s.verifiedN.Store(1)
	}
	s.verified.Store(sum, vt)
	return vt, nil
}

func (s *KeyService) lookup(ctx context.Context, keyID string) (*domain.APIKey, *domain.Account, error) {
	if keyID == "" {
		return nil, nil, errUnauthenticated
	}
	now := s.clock.Now()
	if v, ok := s.cache.Load(keyID); ok {
		c := v.(cachedKey)
		if now.Sub(c.fetched) < s.cacheTTL {
			return c.key, c.account, nil
		}
	}
	key, err := s.keys.GetKey(ctx, keyID)
	if err != nil {
		return nil, nil, err
	}
	account, err := s.accounts.GetAccount(ctx, key.AccountID)
	if err != nil {
		return nil, nil, err
	}
	if s.cacheTTL > 0 {
		s.cache.Store(keyID, cachedKey{key: key, account: account, fetched: now})
	}
	return key, account, nil
}

// Revoke marks a key revoked; tokens carrying it fail from now on in this
// process and within the cache TTL elsewhere. Codes: NOT_FOUND.
func (s *KeyService) Revoke(ctx context.Context, keyID string) (*domain.APIKey, error) {
	k, err := s.keys.RevokeKey(ctx, keyID, s.clock.Now())
	s.cache.Delete(keyID)
	return k, err
}

// ForgetAccount drops cached keys of an account so a type or limit change made
// through this process applies at once.
func (s *KeyService) ForgetAccount(accountID string) {
	s.cache.Range(func(k, v any) bool {
		if v.(cachedKey).account.ID == accountID {
			s.cache.Delete(k)
		}
		return true
	})
}
