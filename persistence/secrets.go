package persistence

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Webhook secrets are stored sealed (never in plaintext at rest): AES-256-GCM under a key
// derived with HKDF-SHA256 from the server's Ed25519 key, which every
// replica and CLI command already share (docs/operations.md#keys-and-roles), so nothing new needs
// configuring. The account id is the additional data: a sealed value copied
// to another account's row does not open. A stored value is
// sealedPrefix + base64(nonce | ciphertext); a value without the prefix is
// a plaintext row written before sealing (Accounts.SealWebhookSecrets
// converts them). Secrets are "whsec_..." and never start with the prefix.
const (
	secretsKeyInfo = "contenteval webhook secrets v1"
	sealedPrefix   = "v1:"
)

// secretBox seals and opens webhook secrets.
type secretBox struct{ aead cipher.AEAD }

// EncryptSecretsWith makes the stores on db seal webhook secrets with a key
// derived from serverKey, and open sealed ones. Call it before the stores
// are used (again with the same key, it does nothing); without it secrets
// are written as given and a sealed one cannot be read.
func (db *DB) EncryptSecretsWith(serverKey ed25519.PrivateKey) error {
	if len(serverKey) != ed25519.PrivateKeySize {
		return errors.New("persistence: the server key is not an Ed25519 private key")
	}
	// Another server in this process sharing db (a replica in tests) calls
	// it again while db is in use: with the same key it is done already,
	// and writing the boxes again would race with their readers.
	if db.secrets != nil && db.secretsKey.Equal(serverKey) {
		return nil
	}
	db.secretsKey = serverKey
	aead, err := newAEAD(serverKey, secretsKeyInfo)
	if err != nil {
		return err
	}
	db.secrets = &secretBox{aead: aead}
	content, err := newAEAD(serverKey, reviewContentKeyInfo)
	if err != nil {
		return err
	}
	db.content = &contentBox{aead: content}
	return nil
}

// seal returns the stored form of the secret of account; "" stays "" (no
// secret), and so does everything when b is nil.
func (b *secretBox) seal(account, secret string) (string, error) {
	if b == nil || secret == "" {
		return secret, nil
	}
	out, err := sealBytes(b.aead, []byte(secret), account)
	if err != nil {
		return "", err
	}
	return sealedPrefix + base64.RawStdEncoding.EncodeToString(out), nil
}

// errUnsealed is the cause when a sealed secret cannot be opened.
var errUnsealed = errors.New("persistence: a sealed webhook secret does not open with this server key (key replaced, row copied or altered)")

// open returns the secret of account from its stored form. A plaintext row
// (written before sealing) is returned as it is.
func (b *secretBox) open(account, stored string) (string, error) {
	rest, ok := strings.CutPrefix(stored, sealedPrefix)
	if !ok {
		return stored, nil
	}
	if b == nil {
		return "", fmt.Errorf("persistence: the webhook secret of account %s is sealed and no server key was given", account)
	}
	raw, err := base64.RawStdEncoding.DecodeString(rest)
	if err != nil {
		return "", errUnsealed
	}
	plain, ok := openBytes(b.aead, raw, account)
	if !ok {
		return "", errUnsealed
	}
	return string(plain), nil
}

// newAEAD returns AES-256-GCM under the key HKDF-SHA256 derives from
// serverKey for info: one key per purpose (secrets, review content).
func newAEAD(serverKey ed25519.PrivateKey, info string) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, serverKey.Seed(), nil, info, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealBytes returns nonce | ciphertext of plain, with account as the
// additional data, so that a sealed value copied to another account's row
// does not open.
func sealBytes(aead cipher.AEAD, plain []byte, account string) ([]byte, error) {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, plain, []byte(account)), nil
}

// openBytes opens what sealBytes made for account; false when it does not
// open (another key, another account, altered bytes).
func openBytes(aead cipher.AEAD, sealed []byte, account string) ([]byte, bool) {
	n := aead.NonceSize()
	if len(sealed) < n {
		return nil, false
	}
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(account))
	return plain, err == nil
}
