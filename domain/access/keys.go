package access

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"strconv"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"
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
	// cache bounds by its TTL how long a revocation or account change made
	// by another process (the CLI, another replica) can go unnoticed.
	cache *keyCache
	// verified remembers tokens whose signature already checked out: the
	// Ed25519 verification is most of the cost of a cheap request. Expiry,
	// revocation and the account are still checked on every request.
	verified *lru.Cache[[32]byte, verifiedToken]
}

type verifiedToken struct {
	subject, keyID, name string
	role                 domain.KeyRole
	expires              *time.Time
}

// keyClaims are the claims of an API key. Role and name are signed into the
// token so the middleware knows what a key may call without a store read;
// a token without a role predates roles and acts as admin.
type keyClaims struct {
	jwt.RegisteredClaims
	Role string `json:"role,omitempty"`
	Name string `json:"name,omitempty"`
}

// Caller is who an authenticated request comes from.
type Caller struct {
	Account *domain.Account
	KeyID   string
	// KeyName is the key's optional name, as signed into the token.
	KeyName string
	Role    domain.KeyRole
}

// NewKeyService returns a KeyService signing with private. cacheTTL is how
// long a verified key and its account are reused before the stores are read
// again (0 disables the cache).
func NewKeyService(keys domain.KeyStore, accounts domain.AccountStore, private ed25519.PrivateKey, clock domain.Clock, cacheTTL time.Duration) *KeyService {
	return &KeyService{
		keys: keys, accounts: accounts, clock: clock,
		cache: newKeyCache(cacheTTL, clock), verified: newVerifiedTokens(),
		private: private, public: private.Public().(ed25519.PublicKey),
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

// Issue creates an admin key for the account and returns it with its signed
// token. ttl 0 means the key does not expire. Codes: NOT_FOUND (account),
// INVALID_ARGUMENT (negative ttl).
func (s *KeyService) Issue(ctx context.Context, accountID, name string, ttl time.Duration) (*domain.APIKey, string, error) {
	return s.IssueRole(ctx, accountID, name, domain.RoleAdmin, ttl)
}

// IssueRole is Issue for a key of the given role. Codes: NOT_FOUND
// (account), INVALID_ARGUMENT (negative ttl, unknown role).
func (s *KeyService) IssueRole(ctx context.Context, accountID, name string, role domain.KeyRole, ttl time.Duration) (*domain.APIKey, string, error) {
	if ttl < 0 {
		return nil, "", domain.InvalidField("ttl", "must not be negative")
	}
	if !role.Valid() {
		return nil, "", domain.InvalidField("role", "must be admin, api or reviewer")
	}
	if _, err := s.accounts.GetAccount(ctx, accountID); err != nil {
		return nil, "", err
	}
	now := s.clock.Now().Truncate(time.Second)
	k := &domain.APIKey{ID: uuid.NewString(), AccountID: accountID, Name: name, Role: role, Created: now}
	claims := keyClaims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: TokenIssuer, Subject: accountID, ID: k.ID, IssuedAt: jwt.NewNumericDate(now),
	}, Role: string(role), Name: name}
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
	c, err := s.AuthenticateCaller(ctx, token)
	if err != nil {
		return nil, err
	}
	return c.Account, nil
}

// AuthenticateCaller is Authenticate returning the key's role and name too.
// The role is the token's, which its signature vouches for. Codes: as
// Authenticate.
func (s *KeyService) AuthenticateCaller(ctx context.Context, token string) (Caller, error) {
	if token == "" {
		return Caller{}, errUnauthenticated
	}
	vt, err := s.verify(token)
	if err != nil {
		return Caller{}, err
	}
	if vt.expires != nil && !s.clock.Now().Before(*vt.expires) {
		return Caller{}, errUnauthenticated
	}
	key, account, err := s.lookup(ctx, vt.keyID)
	if err != nil {
		if domain.ErrorCode(err) == domain.NotFound {
			return Caller{}, errUnauthenticated
		}
		return Caller{}, err
	}
	now := s.clock.Now()
	if key.RevokedAt != nil || key.AccountID != vt.subject || (key.ExpiresAt != nil && !now.Before(*key.ExpiresAt)) {
		return Caller{}, errUnauthenticated
	}
	return Caller{Account: account, KeyID: vt.keyID, KeyName: vt.name, Role: vt.role}, nil
}

// verify checks a token's signature and claims once and remembers the
// result (the least recently used tokens are forgotten first).
func (s *KeyService) verify(token string) (verifiedToken, error) {
	sum := sha256.Sum256([]byte(token))
	if v, ok := s.verified.Get(sum); ok {
		return v, nil
	}
	var claims keyClaims
	if _, err := s.parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return s.public, nil }); err != nil {
		return verifiedToken{}, errUnauthenticated
	}
	role := domain.KeyRole(claims.Role)
	if role == "" {
		role = domain.RoleAdmin
	} else if !role.Valid() {
		return verifiedToken{}, errUnauthenticated
	}
	vt := verifiedToken{subject: claims.Subject, keyID: claims.ID, name: claims.Name, role: role}
	if claims.ExpiresAt != nil {
		exp := claims.ExpiresAt.Time
		vt.expires = &exp
	}
	s.verified.Add(sum, vt)
	return vt, nil
}

func (s *KeyService) lookup(ctx context.Context, keyID string) (*domain.APIKey, *domain.Account, error) {
	if keyID == "" {
		return nil, nil, errUnauthenticated
	}
	c, changes, ok := s.cache.get(keyID)
	if ok {
		return c.key, c.account, nil
	}
	if s.cache.keys == nil {
		return s.read(ctx, keyID)
	}
	// Concurrent requests with one key share one read. The generation is
	// part of the flight's key, so a request after a revocation never joins
	// a read started before it.
	now := s.clock.Now()
	ch := s.cache.reads.DoChan(keyID+"\x00"+strconv.FormatUint(changes, 10), func() (any, error) {
		// Apart from the first caller's context: its cancellation must not
		// fail the others.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keyReadTimeout)
		defer cancel()
		key, account, err := s.read(rctx, keyID)
		if err != nil {
			return nil, err
		}
		e := cachedKey{key: key, account: account, fetched: now}
		s.cache.put(keyID, e, changes)
		return e, nil
	})
	select {
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, nil, r.Err
		}
		e := r.Val.(cachedKey)
		return e.key, e.account, nil
	}
}

// read reads a key and its account from the stores.
func (s *KeyService) read(ctx context.Context, keyID string) (*domain.APIKey, *domain.Account, error) {
	key, err := s.keys.GetKey(ctx, keyID)
	if err != nil {
		return nil, nil, err
	}
	account, err := s.accounts.GetAccount(ctx, key.AccountID)
	if err != nil {
		return nil, nil, err
	}
	return key, account, nil
}

// Revoke marks a key revoked; tokens carrying it fail from now on in this
// process and within the cache TTL elsewhere. Codes: NOT_FOUND.
func (s *KeyService) Revoke(ctx context.Context, keyID string) (*domain.APIKey, error) {
	k, err := s.keys.RevokeKey(ctx, keyID, s.clock.Now())
	s.cache.forget(func(id string, _ cachedKey) bool { return id == keyID })
	return k, err
}

// ForgetAccount drops cached keys of an account so a type or limit change made
// through this process applies at once.
func (s *KeyService) ForgetAccount(accountID string) {
	s.cache.forget(func(_ string, e cachedKey) bool { return e.account.ID == accountID })
}
