// Package access is who may call the API and how often: API keys (issued
// as bearer JWTs signed by the server's key, verified and cached, revoked)
// and the per-account rate limits. Accounts and keys themselves, and their
// store ports, are the kernel's (domain).
package access
