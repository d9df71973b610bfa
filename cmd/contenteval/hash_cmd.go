package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/spf13/cobra"
)

// hashCommand implements `contenteval hash FILE`: it prints the lines operators
// put into hash lists,
//
//	md5 <hex>
//	sha1 <hex>
//	pdq <hex> <quality>
//
// md5 and sha1 are printed for any file (hash lists also carry non-image
// content); the pdq line only when the file is an image we decode, and
// otherwise a one-line note on stderr says why it is missing, with exit 0,
// since the md5/sha1 lines are still a complete answer. FILE "-" reads
// standard input. A file that cannot be read exits 1; bad usage exits 2.
func (c *command) hashCommand() *cobra.Command {
	return &cobra.Command{Use: "hash FILE", Short: "print md5, sha1 and pdq of a file (for building hash lists)",
		Long: "Prints md5, sha1 and (for JPEG, PNG, GIF, WebP, BMP, TIFF images) pdq hash lines for hash lists.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return errors.New("want: hash FILE")
			}
			return nil
		},
		RunE: c.action(func(_ *cobra.Command, args []string) int { return hash(c.ctx, c.stdout, c.stderr, args[0]) })}
}

func hash(ctx context.Context, stdout, stderr io.Writer, name string) int {
	lim := imaging.Limits{}
	res, err := hashFile(ctx, name, lim)
	if err != nil {
		fmt.Fprintf(stderr, "contenteval hash: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "md5 %s\nsha1 %s\n", res.md5, res.sha1)
	if res.pdqErr != nil {
		fmt.Fprintf(stderr, "contenteval hash: %s: no pdq line: %v\n", name, res.pdqErr)
		return 0
	}
	fmt.Fprintf(stdout, "pdq %s %d\n", res.pdq, res.quality)
	return 0
}

type hashResult struct {
	md5, sha1 string
	pdq       imaging.Hash
	quality   int
	pdqErr    error // why there is no pdq line
}

// hashFile streams the file through md5 and sha1, so a large non-image file
// (a video) is hashed without being held in memory, and keeps at most the
// image byte limit plus one byte for decoding.
func hashFile(ctx context.Context, name string, lim imaging.Limits) (hashResult, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return hashResult{}, err
		}
		defer f.Close()
		r = f
	}
	maxBytes := lim.MaxBytes
	if maxBytes <= 0 {
		maxBytes = imaging.DefaultMaxBytes
	}
	m5, s1 := md5.New(), sha1.New()
	head := &capWriter{limit: maxBytes + 1}
	if _, err := io.Copy(io.MultiWriter(m5, s1, head), domain.ContextReader(ctx, r)); err != nil {
		return hashResult{}, fmt.Errorf("read %s: %w", name, err)
	}
	res := hashResult{md5: hex.EncodeToString(m5.Sum(nil)), sha1: hex.EncodeToString(s1.Sum(nil))}
	img, _, err := imaging.Decode(head.buf.Bytes(), lim)
	if err != nil {
		res.pdqErr = err
		return res, nil
	}
	res.pdq, res.quality = imaging.PDQ(img)
	return res, nil
}

// capWriter keeps the first limit bytes written to it and drops the rest.
type capWriter struct {
	buf   bytes.Buffer
	limit int64
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.limit - int64(w.buf.Len()); room > 0 {
		w.buf.Write(p[:min(int64(len(p)), room)])
	}
	return len(p), nil
}
