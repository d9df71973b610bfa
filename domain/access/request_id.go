package access

import (
	"crypto/rand"
	"encoding/hex"
)

// MaxRequestIDLength is the longest client request id kept.
const MaxRequestIDLength = 128

// RequestID is the id a call is logged and answered under, the same way
// for REST (X-Request-Id) and gRPC (x-request-id metadata): the client's
// when it is 1 to 128 letters, digits, '-', '_' or '.', so that it can
// neither forge log lines nor inject a response header; otherwise a new
// random one. An invalid id is replaced rather than refused because the id
// only correlates logs: refusing it would fail a call that is otherwise
// fine over a header the client may not control (a proxy's).
func RequestID(fromClient string) string {
	if validRequestID(fromClient) {
		return fromClient
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func validRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
