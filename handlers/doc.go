// Package handlers is the HTTP adapter: it builds the Echo server, validates
// requests against openapi.yaml, authenticates them, implements
// gen.StrictServerInterface by translating API types to domain calls, and
// writes every failure through one error funnel (docs/api.md#error-bodies).
// It never imports persistence: it sees only domain interfaces.
package handlers
