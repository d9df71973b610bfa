package domain

import (
	"context"
	"io"
	"time"
)

// BlobStore keeps files too large for a database row: batch input and output
// files (docs/operations.md#object-store-s3). Keys are slash-separated paths of [A-Za-z0-9._-]
// segments chosen by the service, never by a client. Two adapters implement
// it (package blobstore): a local directory and an S3-compatible store.
type BlobStore interface {
	// Put stores r under key, replacing what was there, and returns its size.
	// The replacement is atomic: a concurrent Open sees the old or the new
	// content, never a mix. Codes: INVALID_ARGUMENT (bad key), UNAVAILABLE.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Open returns the content of key. Codes: NOT_FOUND, UNAVAILABLE.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat returns the size of key. Codes: NOT_FOUND, UNAVAILABLE.
	Stat(ctx context.Context, key string) (int64, error)
	// Delete removes key; deleting a missing key is not an error.
	// Codes: UNAVAILABLE.
	Delete(ctx context.Context, key string) error
	// PresignURL returns a URL that lets anyone holding it PUT or GET key
	// until expires, without other credentials, when the store can make one
	// (S3). ok is false when it cannot (the local directory): the API's own
	// signed endpoints serve the file then.
	PresignURL(ctx context.Context, method, key string, expires time.Time) (u string, ok bool, err error)
}

// ContextReader returns r reading only while ctx lasts: a long copy of a
// blob, an upload or a file on a slow disk stops with ctx's error at the
// next read after ctx ends, even when r itself knows no context.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return contextReader{ctx, r} }

type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
