// Package webhooks delivers the webhook outbox: signed per the Standard
// Webhooks scheme with the account's secret, retried with exponential
// backoff for a day. The events themselves, their store port and the
// validation of a target are the kernel's (domain/webhooks.go): they are
// written in the same transaction as the state change they report.
package webhooks
