package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/contenteval/contenteval/domain"
)

// S3Config locates a bucket of an S3-compatible store.
type S3Config struct {
	// Endpoint is the store's base URL (https://s3.example.com); empty means
	// AWS itself for Region.
	Endpoint  string
	Region    string
	Bucket    string
	AccessKey string
	SecretKey string
	// Prefix is prepended to every key ("contenteval/"), so several
	// deployments can share a bucket.
	Prefix string
	// PathStyle addresses the bucket as ENDPOINT/BUCKET/KEY rather than
	// BUCKET.ENDPOINT/KEY; most self-hosted stores need it.
	PathStyle bool
	// TempDir spools writes of unknown length before upload (default
	// os.TempDir()).
	TempDir string
}

// S3 stores blobs as objects of one bucket. Its presigned URLs are the
// store's own (SigV4 query signing), so clients move batch files to and from
// the bucket directly.
type S3 struct {
	client  *s3.Client
	presign *s3.PresignClient
	cfg     S3Config
}

var _ domain.BlobStore = (*S3)(nil)

// NewS3 returns the store; it does not contact the endpoint.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("blobstore: S3 bucket is required")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	opts := s3.Options{
		Region:       cfg.Region,
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")),
		UsePathStyle: cfg.PathStyle,
		// Stores other than AWS often reject the newer default checksums.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if cfg.Endpoint != "" {
		opts.BaseEndpoint = aws.String(strings.TrimRight(cfg.Endpoint, "/"))
	}
	client := s3.New(opts)
	return &S3{client: client, presign: s3.NewPresignClient(client), cfg: cfg}, nil
}

func (s *S3) key(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return s.cfg.Prefix + key, nil
}

// s3Error translates an SDK error: a missing object is NOT_FOUND,
// cancellation stays itself, anything else is UNAVAILABLE (the message
// hides the endpoint and bucket, the cause keeps them for logs).
func s3Error(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return domain.Errorf(domain.NotFound, "file not found")
	}
	var api smithy.APIError
	if errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
		return domain.Errorf(domain.NotFound, "file not found")
	}
	return unavailable("s3 "+op, err)
}

// Put uploads r as key. A reader that cannot seek is spooled to a
// temporary file first, so the SDK can sign a known length and memory stays
// flat. Codes: INVALID_ARGUMENT, UNAVAILABLE, or the error of r.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	k, err := s.key(key)
	if err != nil {
		return 0, err
	}
	body, ok := r.(io.ReadSeeker)
	var size int64
	if ok {
		if size, err = body.Seek(0, io.SeekEnd); err != nil {
			ok = false
		} else if _, err = body.Seek(0, io.SeekStart); err != nil {
			return 0, unavailable("seek", err)
		}
	}
	if !ok {
		f, err := os.CreateTemp(s.cfg.TempDir, "contenteval-s3-*")
		if err != nil {
			return 0, unavailable("spool", err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		if size, err = io.Copy(f, domain.ContextReader(ctx, r)); err != nil {
			return 0, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return 0, unavailable("spool", err)
		}
		body = f
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k), Body: body, ContentLength: aws.Int64(size),
	})
	if err != nil {
		return 0, s3Error("put", err)
	}
	return size, nil
}

// Open streams key. Codes: NOT_FOUND, INVALID_ARGUMENT, UNAVAILABLE.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k)})
	if err != nil {
		return nil, s3Error("get", err)
	}
	return out.Body, nil
}

// Stat returns the size of key. Codes: NOT_FOUND, INVALID_ARGUMENT,
// UNAVAILABLE.
func (s *S3) Stat(ctx context.Context, key string) (int64, error) {
	k, err := s.key(key)
	if err != nil {
		return 0, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k)})
	if err != nil {
		return 0, s3Error("head", err)
	}
	return aws.ToInt64(out.ContentLength), nil
}

// Delete removes key (S3 deletes are idempotent). Codes: INVALID_ARGUMENT,
// UNAVAILABLE.
func (s *S3) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k)})
	if e := s3Error("delete", err); e != nil && domain.ErrorCode(e) != domain.NotFound {
		return e
	}
	return nil
}

// PresignURL returns a SigV4 presigned PUT or GET URL of key valid until
// expires (at most 7 days, the SigV4 limit). Codes: INVALID_ARGUMENT.
func (s *S3) PresignURL(ctx context.Context, method, key string, expires time.Time) (string, bool, error) {
	k, err := s.key(key)
	if err != nil {
		return "", false, err
	}
	ttl := time.Until(expires)
	if ttl <= 0 || ttl > 7*24*time.Hour {
		return "", false, domain.Errorf(domain.InvalidArgument, "a presigned URL must expire within 7 days")
	}
	opt := s3.WithPresignExpires(ttl)
	switch method {
	case http.MethodPut:
		r, err := s.presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k)}, opt)
		if err != nil {
			return "", false, unavailable("presign", err)
		}
		return r.URL, true, nil
	case http.MethodGet:
		r, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(k)}, opt)
		if err != nil {
			return "", false, unavailable("presign", err)
		}
		return r.URL, true, nil
	}
	return "", false, fmt.Errorf("blobstore: cannot presign %s", method)
}

// EnsureBucket creates the bucket when it does not exist (for first starts
// and tests). Codes: UNAVAILABLE.
func (s *S3) EnsureBucket(ctx context.Context) error {
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.cfg.Bucket)}); err == nil {
		return nil
	}
	_, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.cfg.Bucket)})
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return unavailable("create bucket", err)
	}
	return nil
}
