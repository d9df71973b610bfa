package webhooks

import (
	"fmt"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// maxWebhookHeaders bounds the extra headers of a webhook target.
const maxWebhookHeaders = 20

// ValidateTarget checks a customer's webhook target when it is submitted,
// so a bad URL is a 400 now rather than a silent failure later. field names
// the request field (webhook.url, webhookUrl).
func ValidateTarget(p domain.WebhookPoster, field, url string, headers map[string]string) error {
	if err := p.CheckURL(url); err != nil {
		return domain.InvalidField(field, err.Error())
	}
	if p.RequireHTTPS() && !strings.HasPrefix(strings.ToLower(url), "https://") {
		return domain.InvalidField(field, "must be an https URL")
	}
	if len(headers) > maxWebhookHeaders {
		return domain.InvalidField("webhook.extraHeaders", fmt.Sprintf("at most %d headers", maxWebhookHeaders))
	}
	for k, v := range headers {
		if !validHeaderName(k) || strings.ContainsAny(v, "\r\n") || len(v) > 1024 {
			return domain.InvalidField("webhook.extraHeaders", fmt.Sprintf("%q is not a valid header name and value", k))
		}
	}
	return nil
}

func validHeaderName(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, r := range k {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
