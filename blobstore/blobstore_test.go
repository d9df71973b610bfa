package blobstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/blobstore"
	"github.com/contenteval/contenteval/blobstore/blobstoretest"
	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

// conformance is what every domain.BlobStore must do.
func conformance(t *testing.T, s domain.BlobStore) {
	ctx := context.Background()
	_, err := s.Open(ctx, "batches/x/missing")
	require.Equal(t, domain.NotFound, domain.ErrorCode(err))
	_, err = s.Stat(ctx, "batches/x/missing")
	require.Equal(t, domain.NotFound, domain.ErrorCode(err))
	for _, bad := range []string{"", "../etc/passwd", "a//b", "a/./b", "/abs", "a/b c", "a/..", strings.Repeat("a", 600)} {
		_, err := s.Put(ctx, bad, strings.NewReader("x"))
		require.Equal(t, domain.InvalidArgument, domain.ErrorCode(err), "key %q", bad)
	}

	// A non-seekable reader (a request body) and a seekable one.
	n, err := s.Put(ctx, "batches/a/input", io.MultiReader(strings.NewReader("hello "), strings.NewReader("world")))
	require.NoError(t, err)
	require.EqualValues(t, 11, n)
	size, err := s.Stat(ctx, "batches/a/input")
	require.NoError(t, err)
	require.EqualValues(t, 11, size)
	requireContent(t, s, "batches/a/input", "hello world")

	big := make([]byte, 3<<20)
	_, _ = rand.Read(big)
	n, err = s.Put(ctx, "batches/a/input", bytes.NewReader(big))
	require.NoError(t, err)
	require.EqualValues(t, len(big), n)
	requireContent(t, s, "batches/a/input", string(big))

	// A failing reader leaves the previous content in place.
	_, err = s.Put(ctx, "batches/a/input", io.MultiReader(strings.NewReader("partial"), errReader{}))
	require.Error(t, err)
	requireContent(t, s, "batches/a/input", string(big))

	require.NoError(t, s.Delete(ctx, "batches/a/input"))
	require.NoError(t, s.Delete(ctx, "batches/a/input"), "deleting twice is fine")
	_, err = s.Open(ctx, "batches/a/input")
	require.Equal(t, domain.NotFound, domain.ErrorCode(err))
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, fmt.Errorf("client went away") }

func requireContent(t *testing.T, s domain.BlobStore, key, want string) {
	t.Helper()
	rc, err := s.Open(context.Background(), key)
	require.NoError(t, err)
	defer rc.Close()
	got, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.True(t, string(got) == want, "content of %s differs (%d bytes, want %d)", key, len(got), len(want))
}

func TestLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := blobstore.NewLocal(filepath.Join(dir, "blobs"))
	require.NoError(t, err)
	conformance(t, s)
	_, ok, err := s.PresignURL(context.Background(), http.MethodPut, "batches/a/input", time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.False(t, ok, "the local store serves files through the API's signed endpoints")
	// No temporary files are left behind, and Delete pruned empty directories.
	entries, err := os.ReadDir(filepath.Join(dir, "blobs"))
	require.NoError(t, err)
	require.Empty(t, entries)
}

func TestS3AgainstVersityGW(t *testing.T) {
	t.Parallel()
	endpoint := blobstoretest.StartVersityGW(t)
	s, err := blobstore.NewS3(blobstore.S3Config{
		Endpoint: endpoint, Region: "us-east-1", Bucket: "contenteval-test", AccessKey: blobstoretest.AccessKey, SecretKey: blobstoretest.SecretKey,
		Prefix: "p1/", PathStyle: true, TempDir: t.TempDir(),
	})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, s.EnsureBucket(ctx))
	require.NoError(t, s.EnsureBucket(ctx), "idempotent")
	conformance(t, s)

	// Presigned URLs come from the store and work with plain HTTP, no
	// credentials: a client uploads and downloads directly.
	putURL, ok, err := s.PresignURL(ctx, http.MethodPut, "batches/b/input", time.Now().Add(4*time.Hour))
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, strings.HasPrefix(putURL, endpoint), putURL)
	req, err := http.NewRequest(http.MethodPut, putURL, strings.NewReader("ref_id,type,content\na,text,hi\n"))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	requireContent(t, s, "batches/b/input", "ref_id,type,content\na,text,hi\n")

	getURL, ok, err := s.PresignURL(ctx, http.MethodGet, "batches/b/input", time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.True(t, ok)
	resp, err = http.Get(getURL)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ref_id,type,content\na,text,hi\n", string(body))

	// An altered presigned URL is refused by the store.
	resp, err = http.Get(strings.Replace(getURL, "batches/b/input", "batches/b/other", 1))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	_, _, err = s.PresignURL(ctx, http.MethodGet, "batches/b/input", time.Now().Add(-time.Minute))
	require.Equal(t, domain.InvalidArgument, domain.ErrorCode(err))
}
