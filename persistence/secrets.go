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

// Webhook secrets are stored sealed (DESIGN §15): AES-256-GCM under a key
// derived with HKDF-SHA256 from the server's Ed25519 key, which every
// replica and CLI command already share (DESIGN §3), so nothing new needs
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
// derived from serverKey, and open sealed ones. Call it once, before the
// stores are used; without it secrets are written as given and a sealed
// one cannot be read.
func (db *DB) EncryptSecretsWith(serverKey ed25519.PrivateKey) error {
	if len(serverKey) != ed25519.PrivateKeySize {
		return errors.New("persistence: the server key is not an Ed25519 private key")
	}
	key, err := hkdf.Key(sha256.New, serverKey.Seed(), nil, secretsKeyInfo, 32)
	if err != nil {
		return err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return err
	}
	db.secrets = &secretBox{aead: aead}
	return nil
}

// seal returns the stored form of the secret of account; "" stays "" (no
// secret), and so does everything when b is nil.
func (b *secretBox) seal(account, secret string) (string, error) {
	if b == nil || secret == "" {
		return secret, nil
	}
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(secret)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := b.aead.Seal(nonce, nonce, []byte(secret), []byte(account))
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
	if err != nil || len(raw) < b.aead.NonceSize() {
		return "", errUnsealed
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(account))
	if err != nil {
		return "", errUnsealed
	}
	return string(plain), nil
}
