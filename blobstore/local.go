package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// Local stores blobs as files under a directory. Writes go to a temporary
// file in the target's directory, are fsynced, then renamed over the target
// (and the directory fsynced), so a reader or a crash never sees a partial
// file. It makes no URLs of its own: the API's signed endpoints serve its
// files.
type Local struct{ dir string }

var _ domain.BlobStore = (*Local)(nil)

// NewLocal returns a store rooted at dir, creating it. Directories are
// created 0700 and files 0600 (os.CreateTemp): batch files are customer
// content, readable by the server's user only.
func NewLocal(dir string) (*Local, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blobstore: create %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &Local{dir: abs}, nil
}

func (l *Local) path(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(l.dir, filepath.FromSlash(key)), nil
}

// unavailable hides a file-system error (which names paths) behind a safe
// message while keeping it for logs.
func unavailable(op string, err error) error {
	msg := "the file store failed; retry later"
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		msg = "storage is unavailable: disk full"
	case errors.Is(err, syscall.EIO):
		msg = "storage is unavailable: I/O error"
	case errors.Is(err, syscall.EROFS):
		msg = "storage is unavailable: the file store is read-only"
	}
	return &storeError{err: domain.Errorf(domain.Unavailable, "%s", msg), cause: fmt.Errorf("blobstore %s: %w", op, err)}
}

type storeError struct {
	err   *domain.Error
	cause error
}

func (e *storeError) Error() string   { return e.err.Error() + ": " + e.cause.Error() }
func (e *storeError) Unwrap() []error { return []error{e.err, e.cause} }

// createTemp creates a temporary file in dir, creating dir first. A
// concurrent Delete prunes empty parent directories: one may vanish between
// MkdirAll and CreateTemp (seen as a 503 on a batch upload while another
// batch's input was dropped), so that race is retried; once the file
// exists its directory is not empty and stays.
func (l *Local) createTemp(dir string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			if errors.Is(err, fs.ErrNotExist) && attempt < 10 {
				continue
			}
			return nil, unavailable("mkdir", err)
		}
		f, err := os.CreateTemp(dir, ".put-*")
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt >= 10 {
			return nil, unavailable("create", err)
		}
	}
}

// Put writes r to key atomically. Codes: INVALID_ARGUMENT, UNAVAILABLE, or
// the error of r (a client that went away, a body over its limit).
func (l *Local) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	p, err := l.path(key)
	if err != nil {
		return 0, err
	}
	f, err := l.createTemp(filepath.Dir(p))
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	n, err := io.Copy(f, domain.ContextReader(ctx, r))
	if err != nil {
		var de *domain.Error
		if errors.As(err, &de) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return 0, err
		}
		if _, isPath := err.(*fs.PathError); isPath {
			return 0, unavailable("write", err)
		}
		return 0, err // the reader's error: the caller knows what it means
	}
	if err := f.Sync(); err != nil {
		return 0, unavailable("fsync", err)
	}
	if err := f.Close(); err != nil {
		return 0, unavailable("close", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return 0, unavailable("rename", err)
	}
	ok = true
	if d, err := os.Open(filepath.Dir(p)); err == nil { // make the rename durable
		_ = d.Sync()
		d.Close()
	}
	return n, nil
}

// Open returns the file of key. Codes: NOT_FOUND, INVALID_ARGUMENT,
// UNAVAILABLE.
func (l *Local) Open(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, domain.Errorf(domain.NotFound, "file not found")
	}
	if err != nil {
		return nil, unavailable("open", err)
	}
	return f, nil
}

// Stat returns the size of key. Codes: NOT_FOUND, INVALID_ARGUMENT,
// UNAVAILABLE.
func (l *Local) Stat(_ context.Context, key string) (int64, error) {
	p, err := l.path(key)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, domain.Errorf(domain.NotFound, "file not found")
	}
	if err != nil {
		return 0, unavailable("stat", err)
	}
	return fi.Size(), nil
}

// Delete removes key and the directories it leaves empty. Codes:
// INVALID_ARGUMENT, UNAVAILABLE.
func (l *Local) Delete(_ context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return unavailable("remove", err)
	}
	for d := filepath.Dir(p); d != l.dir && strings.HasPrefix(d, l.dir); d = filepath.Dir(d) {
		if os.Remove(d) != nil { // not empty (or gone): stop
			break
		}
	}
	return nil
}

// PresignURL reports that the local store makes no URLs of its own.
func (l *Local) PresignURL(context.Context, string, string, time.Time) (string, bool, error) {
	return "", false, nil
}
