package persistence

// Packed JSON columns: a job's input and a result's report stored as
// zstd-compressed JSON in a binary column instead of JSON text. A
// synchronous job's row is far under PostgreSQL's TOAST threshold (2 KB),
// so the server never compresses its 1 KiB input, and a 20-label report
// (about 8 KB of JSON) it compresses alone, without knowing the report's
// vocabulary. Compressed here, against a preset dictionary of that
// vocabulary, both are a fraction of what they were on both dialects (the
// figures: bench/results/history.md#bytes-per-job).
//
// Format: one version byte, then a zstd frame (RFC 8878) compressed with
// the raw content dictionary of that version, without checksum. A
// dictionary is part of the stored format: it never changes once rows use
// it; a new one takes a new version byte, and the old ones stay for
// reading. zstd at its fastest level, not DEFLATE: on a 20-label report
// both give about 360-380 bytes, and DEFLATE (compress/flate) took several
// times the CPU of encoding the JSON itself.

import (
	"encoding/json"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// packedV1 is the version byte of zstd with packDictV1.
const packedV1 = 1

// packDictV1 is the preset dictionary of version 1: the keys and values
// every report and every input repeats; the most frequent last, where
// offsets are shortest.
const packDictV1 = `[{"kind":"image","url":"https://","metadata":{}},{"kind":"video","captions":""},` +
	`{"kind":"audio","bytes":""}]` +
	`"Spans":[{"Start":0,"End":0}],"SpansTruncated":true,"Matches":[{"Start":0,"End":0}],` +
	`"Exception":{"Result":"OUTCOME_TRUE","Assertions":[],"Review":{"Outcome":"OUTCOME_TRUE","Score":1}},` +
	`"Result":"OUTCOME_FAILED","Score":-1},{"Result":"OUTCOME_UNSPECIFIED",` +
	`"LabelMatches":{},"Threshold":0.5,"TokenUsage":{"InputTokens":0,"BilledTokens":0,"Multiplier":1}}` +
	`{"Result":"OUTCOME_TRUE","Sections":[{"Name":"","Message":"review","Result":"OUTCOME_TRUE","Score":1,"Assertions":[` +
	`{"Result":"OUTCOME_TRUE","Message":"","Score":1},` +
	`{"Result":"OUTCOME_FALSE","Message":"\" (lexical match)","Score":0}],` +
	`"Exception":null,"Review":{"Outcome":"OUTCOME_FALSE","Score":0},"Matches":null},{"Name":"` +
	`[{"kind":"text","text":"`

// maxUnpacked bounds what one packed value may decode to: far above the
// largest input (100 texts of 256 KiB) or report, so that a damaged value
// fails instead of taking the process's memory.
const maxUnpacked = 256 << 20

// packDictID names packDictV1 inside the zstd frames.
const packDictID = 1

var (
	packEncoder = mustZstd(zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false),
		zstd.WithEncoderDictRaw(packDictID, []byte(packDictV1))))
	packDecoder = mustZstd(zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxUnpacked),
		zstd.WithDecoderDictRaw(packDictID, []byte(packDictV1))))
)

// mustZstd returns a coder made from constant options, which cannot fail.
func mustZstd[T any](c T, err error) T {
	if err != nil {
		panic(err)
	}
	return c
}

// packJSON returns v as packed JSON.
func packJSON(v any) ([]byte, error) {
	text, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return packEncoder.EncodeAll(text, append(make([]byte, 0, len(text)/4+16), packedV1)), nil
}

// unpackJSON decodes packed JSON into v.
func unpackJSON(b []byte, v any) error {
	if len(b) == 0 || b[0] != packedV1 {
		return fmt.Errorf("packed JSON: unknown format %v", b[:min(1, len(b))])
	}
	text, err := packDecoder.DecodeAll(b[1:], nil)
	if err != nil {
		return fmt.Errorf("packed JSON: %w", err)
	}
	if err := json.Unmarshal(text, v); err != nil {
		return fmt.Errorf("packed JSON: %w", err)
	}
	return nil
}

// readJSONColumn decodes a column pair: the packed form when the row has
// one, else the JSON text of rows written before it existed.
func readJSONColumn(packed []byte, text string, v any) error {
	if packed != nil {
		return unpackJSON(packed, v)
	}
	return unmarshalJSON(text, v)
}
