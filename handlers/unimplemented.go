package handlers

import (
	"github.com/contenteval/contenteval/domain"
)

// notImplemented answers operations whose issue is not done yet: an honest
// 501, never a fake success.
func notImplemented(operationID string) error {
	return domain.Errorf(domain.Unimplemented, "%s is not implemented yet", operationID)
}
