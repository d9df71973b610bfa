package grpcapi

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/contenteval/contenteval/domain"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// maxValues bounds the repeated elements and map entries of one request, as
// REST bounds the JSON values of a content-carrying body (docs/api.md#limits): a
// 32 MiB message of one-byte metadata entries would otherwise decode into
// millions of map entries before any handler could refuse it.
const maxValues = 100_000

// refusedField marks a request the codec refused. grpc-go answers a failed
// Unmarshal with INTERNAL before any interceptor runs, and a client's bad
// bytes are not a server fault; so the codec leaves the message empty
// except for this unknown field holding the reason, and the interceptors
// answer INVALID_ARGUMENT after authentication, as REST does. A client that
// sends the field itself only refuses its own request.
const refusedField protowire.Number = protowire.MaxValidNumber

// codec is grpc-go's proto codec with the input checks of docs/api.md#limits in
// front of Unmarshal: well-formed wire data, valid UTF-8 and no NUL in
// every string, and at most maxValues values.
type codec struct{ base encoding.CodecV2 }

func newCodec() codec { return codec{base: encoding.GetCodecV2("proto")} }

func (codec) Name() string { return "proto" }

func (c codec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return c.base.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	b := buf.ReadOnlyData()
	budget := maxValues
	field, reason := scanMessage(b, m.ProtoReflect().Descriptor(), "", &budget, 0)
	if reason == "" {
		if err := proto.Unmarshal(b, m); err != nil {
			field, reason = "request", "is not a valid protobuf message"
		}
	}
	if reason != "" {
		proto.Reset(m)
		m.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, refusedField, protowire.BytesType),
			[]byte(field+"\x00"+reason)))
	}
	return nil
}

// refusal returns the INVALID_ARGUMENT of a request the codec refused, or
// nil.
func refusal(m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil
	}
	raw := pm.ProtoReflect().GetUnknown()
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return nil
		}
		raw = raw[n:]
		if num == refusedField && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(raw)
			field, reason, _ := strings.Cut(string(v), "\x00")
			if reason == "" {
				field, reason = "request", "was refused"
			}
			return domain.InvalidField(field, reason)
		}
		n = protowire.ConsumeFieldValue(num, typ, raw)
		if n < 0 {
			return nil
		}
		raw = raw[n:]
	}
	return nil
}

// maxDepth bounds the nesting the scan follows; the service's messages nest
// five deep, so anything deeper is unknown fields skipped whole.
const maxDepth = 32

// scanMessage walks the wire data of one message of type md and returns
// the first field that breaks the rules (its path in proto field names,
// content_data[1].text) and why, or "", "".
func scanMessage(b []byte, md protoreflect.MessageDescriptor, prefix string, budget *int, depth int) (string, string) {
	if depth > maxDepth {
		return prefix + "request", "nests too deep"
	}
	counts := map[protowire.Number]int{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return orRequest(prefix), "is not a valid protobuf message"
		}
		b = b[n:]
		fd := md.Fields().ByNumber(num)
		if typ != protowire.BytesType || fd == nil {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return orRequest(prefix), "is not a valid protobuf message"
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return orRequest(prefix), "is not a valid protobuf message"
		}
		b = b[n:]
		name := prefix + string(fd.Name())
		if fd.IsList() || fd.IsMap() {
			*budget--
			if *budget < 0 {
				return name, "holds more than " + strconv.Itoa(maxValues) + " values in this request"
			}
		}
		if fd.IsList() {
			name += "[" + strconv.Itoa(counts[num]) + "]"
			counts[num]++
		}
		switch {
		case fd.IsMap():
			// Entries are reported by the map's name: their keys are the
			// client's data.
			if _, reason := scanMessage(v, fd.Message(), name+".", budget, depth+1); reason != "" {
				return name, reason
			}
		case fd.Kind() == protoreflect.StringKind:
			if reason := badText(v); reason != "" {
				return name, reason
			}
		case fd.Kind() == protoreflect.MessageKind:
			if field, reason := scanMessage(v, fd.Message(), name+".", budget, depth+1); reason != "" {
				return field, reason
			}
		}
	}
	return "", ""
}

func orRequest(prefix string) string {
	if prefix == "" {
		return "request"
	}
	return strings.TrimSuffix(prefix, ".")
}

// badText says why a string is refused on every backend (docs/api.md#input-leniency):
// PostgreSQL text holds neither NUL nor invalid UTF-8.
func badText(b []byte) string {
	if !utf8.Valid(b) {
		return "is not valid UTF-8"
	}
	for _, c := range b {
		if c == 0 {
			return "contains a NUL character"
		}
	}
	return ""
}
