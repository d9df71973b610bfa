// Package domain is contenteval's kernel: the entities and their states,
// the one error type, the clock, ids, paging, and the ports (store
// interfaces) persistence and the adapters implement. It knows nothing of
// HTTP or SQL and imports no package of this project but the rule engine
// (domain/rules). The services live in one package per aggregate beside it:
// domain/evaluation (the one place a content item is evaluated),
// domain/jobs, domain/policies, domain/labels, domain/batches,
// domain/webhooks and domain/access (API keys, rate limits).
package domain
