package persistence

// PostgreSQL array arguments for the unnest statement of
// job_finish_postgres.go: hand-written text and binary encoders, because
// lib/pq's own were a measurable share of the server's CPU per job. Apart
// because they are a wire-format concern with tests of their own
// (arrays_internal_test.go).

import (
	"database/sql/driver"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/lib/pq"
)

// postgresArrayTime is how a time travels inside an array argument: lib/pq
// would write it with a space, which array syntax would have to quote.
const postgresArrayTime = "2006-01-02T15:04:05.999999Z07:00"

// columnArrays returns one array argument per column of in's rows, whose
// PostgreSQL types are types: a binaryTextArray for text columns when the
// connection sends []byte arguments in binary (binary), else a textArray;
// a textArray for times; lib/pq's GenericArray for the others (numbers,
// NULLs).
func (in rowsInsert) columnArrays(types []string, binary bool) []any {
	out := make([]any, len(in.columns))
	for c := range in.columns {
		if types[c] == "bytea" {
			out[c] = in.byteaColumn(c, binary)
			continue
		}
		texts := make([]string, 0, len(in.rows))
		vals := make([]any, len(in.rows))
		for r, row := range in.rows {
			// vals keeps every value, for a column that mixes NULLs in.
			switch v := row[c].(type) {
			case string:
				texts = append(texts, v)
				vals[r] = v
			case time.Time:
				t := v.UTC().Format(postgresArrayTime)
				texts = append(texts, t)
				vals[r] = t
			case *time.Time:
				if v != nil {
					t := v.UTC().Format(postgresArrayTime)
					texts = append(texts, t)
					vals[r] = t
				}
			default:
				vals[r] = v
			}
		}
		switch {
		case len(texts) < len(in.rows):
			out[c] = pq.GenericArray{A: vals}
		case types[c] == "text" && binary:
			out[c] = binaryTextArray(texts)
		default:
			out[c] = textArray(texts)
		}
	}
	return out
}

// byteaColumn is column c of in's rows ([]byte values, nil for NULL) as a
// bytea[] argument.
func (in rowsInsert) byteaColumn(c int, binary bool) driver.Valuer {
	vals := make(byteaArray, len(in.rows))
	for r, row := range in.rows {
		vals[r], _ = row[c].([]byte)
	}
	if binary {
		return binaryByteaArray(vals)
	}
	return vals
}

// byteaArray is a bytea[] argument as an array literal: each element in
// bytea's hex format, NULL for nil.
type byteaArray [][]byte

func (a byteaArray) Value() (driver.Value, error) {
	n := 2
	for _, v := range a {
		n += 6 + 2*len(v)
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, v := range a {
		if i > 0 {
			b = append(b, ',')
		}
		if v == nil {
			b = append(b, "NULL"...)
			continue
		}
		b = append(b, `"\\x`...)
		b = hex.AppendEncode(b, v)
		b = append(b, '"')
	}
	return string(append(b, '}')), nil
}

// binaryByteaArray is a bytea[] argument in the binary array format of
// binaryTextArray, with NULL (length -1) for nil.
type binaryByteaArray [][]byte

// byteaOID is the type OID of bytea.
const byteaOID = 17

func (a binaryByteaArray) Value() (driver.Value, error) {
	n := 20
	nulls := uint32(0)
	for _, v := range a {
		n += 4 + len(v)
		if v == nil {
			nulls = 1
		}
	}
	b := make([]byte, 0, n)
	ndim := uint32(1)
	if len(a) == 0 {
		ndim = 0
	}
	b = binary.BigEndian.AppendUint32(b, ndim)
	b = binary.BigEndian.AppendUint32(b, nulls)
	b = binary.BigEndian.AppendUint32(b, byteaOID)
	if ndim == 1 {
		b = binary.BigEndian.AppendUint32(b, uint32(len(a)))
		b = binary.BigEndian.AppendUint32(b, 1)
	}
	for _, v := range a {
		if v == nil {
			b = binary.BigEndian.AppendUint32(b, 0xFFFFFFFF)
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b, nil
}

// binaryTextArray is a text[] argument in PostgreSQL's binary array format
// (array_recv): no quoting for the client to write nor escapes for the
// server to parse, which on a report's JSON was a tenth of PostgreSQL's CPU
// per job. Only for connections with binary_parameters, which send []byte
// arguments as binary.
type binaryTextArray []string

// textOID is the type OID of text, the element type of the array.
const textOID = 25

// Value renders the binary format: dimensions (1, or 0 when empty), no
// NULLs, the element type, the length and lower bound (1) of the dimension,
// then each element as a length and its bytes.
func (a binaryTextArray) Value() (driver.Value, error) {
	n := 20
	for _, s := range a {
		n += 4 + len(s)
	}
	b := make([]byte, 0, n)
	ndim := uint32(1)
	if len(a) == 0 {
		ndim = 0
	}
	b = binary.BigEndian.AppendUint32(b, ndim)
	b = binary.BigEndian.AppendUint32(b, 0) // no NULLs
	b = binary.BigEndian.AppendUint32(b, textOID)
	if ndim == 1 {
		b = binary.BigEndian.AppendUint32(b, uint32(len(a)))
		b = binary.BigEndian.AppendUint32(b, 1)
	}
	for _, s := range a {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return b, nil
}

// textArray is a text[] argument. lib/pq's arrays escape an element with
// one bytes.IndexAny call per quote, which on a result's report (JSON with
// hundreds of quotes) took a tenth of the server's CPU per synchronous job.
type textArray []string

// Value renders the array literal: every element quoted, with '"' and '\'
// escaped by a backslash (the only characters that need it there).
func (a textArray) Value() (driver.Value, error) {
	n := 2
	for _, s := range a {
		n += len(s) + 3
	}
	b := make([]byte, 0, n+n/8)
	b = append(b, '{')
	for i, s := range a {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				b = append(b, '\\')
			}
			b = append(b, s[j])
		}
		b = append(b, '"')
	}
	return string(append(b, '}')), nil
}
