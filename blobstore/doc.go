// Package blobstore implements domain.BlobStore: Local, a directory on the
// server's disk (the default, $DATA_DIR/blobs), and S3, any S3-compatible
// object store (what several replicas share: docs/operations.md#object-store-s3), whose presigned URLs
// let clients upload and download batch files without passing through the
// API.
package blobstore

import (
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// checkKey accepts slash-separated segments of [A-Za-z0-9._-], none of them
// "." or "..": keys come from the service, but a bad one must never reach
// the file system or a bucket as a path traversal.
func checkKey(key string) error {
	bad := domain.Errorf(domain.InvalidArgument, "invalid blob key")
	if key == "" || len(key) > 512 {
		return bad
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad
		}
		for _, r := range seg {
			if !(r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return bad
			}
		}
	}
	return nil
}
