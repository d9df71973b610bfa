package grpcapi

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func decode(t testing.TB, b []byte, m proto.Message) error {
	t.Helper()
	require.NoError(t, newCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m), "the codec never fails: grpc-go would answer INTERNAL")
	return refusal(m)
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}

// corrupt replaces the first old in b with new of the same length, for
// bytes the generated code refuses to encode.
func corrupt(b []byte, old, new string) []byte {
	return bytes.Replace(b, []byte(old), []byte(new), 1)
}

func TestCodecRefusesBadInput(t *testing.T) {
	create := &pb.CreateJobRequest{PolicyId: "p", ContentData: []*pb.ContentData{
		{Content: &pb.ContentData_Text{Text: "fine"}, Metadata: map[string]string{"k": "v"}},
		{Content: &pb.ContentData_Text{Text: "TEXT"}, Metadata: map[string]string{"KEY": "VAL"}},
		{Content: &pb.ContentData_Image{Image: []byte("\x00\xff bytes may hold anything")}},
	}, Webhook: &pb.CreateJobRequest_Webhook{Url: "https://example.com", ExtraHeaders: map[string]string{"h": "HDR"}}}
	valid := marshal(t, create)
	many := map[string]string{}
	for i := range maxValues {
		many[fmt.Sprint(i)] = ""
	}
	for _, tc := range []struct {
		name   string
		data   []byte
		msg    proto.Message
		field  string
		reason string
	}{
		{"valid", valid, &pb.CreateJobRequest{}, "", ""},
		{"invalid UTF-8 in a repeated message's string", corrupt(valid, "TEXT", "T\xc3\x28T"), &pb.CreateJobRequest{}, "content_data[1].text", "UTF-8"},
		{"NUL in text", corrupt(valid, "TEXT", "T\x00XT"), &pb.CreateJobRequest{}, "content_data[1].text", "NUL"},
		{"invalid UTF-8 in a map key", corrupt(valid, "KEY", "K\xffY"), &pb.CreateJobRequest{}, "content_data[1].metadata", "UTF-8"},
		{"NUL in a map value", corrupt(valid, "VAL", "V\x00L"), &pb.CreateJobRequest{}, "content_data[1].metadata", "NUL"},
		{"NUL in a nested map", corrupt(valid, "HDR", "H\x00R"), &pb.CreateJobRequest{}, "webhook.extra_headers", "NUL"},
		{"truncated", valid[:len(valid)-3], &pb.CreateJobRequest{}, "", "not a valid protobuf message"},
		{"truncated inside a nested message", corrupt(valid, "\x12\x04TEXT", "\x12\x09TEXT"), &pb.CreateJobRequest{}, "", "not a valid protobuf message"},
		{"NUL in a list query", marshal(t, &pb.ListJobsRequest{Query: &pb.ListJobsRequest_Query{PolicyId: proto.String("a\x00")}}), &pb.ListJobsRequest{}, "query.policy_id", "NUL"},
		{"NUL in a page token", marshal(t, &pb.ListJobsRequest{PageToken: "\x00"}), &pb.ListJobsRequest{}, "page_token", "NUL"},
		{"too many values", marshal(t, &pb.EvaluateRequest{ContentData: []*pb.ContentData{{Metadata: many}}}), &pb.EvaluateRequest{}, "content_data[0].metadata", "more than 100000 values"},
		{"values are counted across fields", marshal(t, &pb.EvaluateRequest{ContentData: []*pb.ContentData{{Metadata: map[string]string{"a": "b"}}}, Options: many}), &pb.EvaluateRequest{}, "options", "more than 100000 values"},
		{"unknown fields are kept out of the checks", append(bytes.Clone(valid), protowire.AppendBytes(protowire.AppendTag(nil, 999, protowire.BytesType), []byte("\xff\x00"))...), &pb.CreateJobRequest{}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := decode(t, tc.data, tc.msg)
			if tc.reason == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			de := err.(*domain.Error)
			require.Equal(t, domain.InvalidArgument, de.Code)
			require.Contains(t, de.Message, tc.reason)
			if tc.field != "" {
				require.Equal(t, tc.field, de.Details[0].(domain.BadRequest).FieldViolations[0].Field)
			}
			set := 0
			tc.msg.ProtoReflect().Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool { set++; return true })
			require.Zero(t, set, "a refused message holds nothing a handler could use")
		})
	}

	// A client that sends the marker itself refuses only its own request.
	marked := append(bytes.Clone(valid), protowire.AppendBytes(protowire.AppendTag(nil, refusedField, protowire.BytesType), []byte("x\x00y"))...)
	require.Equal(t, domain.InvalidField("x", "y"), decode(t, marked, &pb.CreateJobRequest{}))

	// What passes decodes as proto.Unmarshal would.
	var got pb.CreateJobRequest
	require.NoError(t, decode(t, valid, &got))
	require.True(t, proto.Equal(create, &got))
}

// FuzzCodec feeds arbitrary bytes to the codec as every request type: it
// never fails (grpc-go would answer INTERNAL), and what it lets through is
// a message whose strings are valid UTF-8 without NUL.
func FuzzCodec(f *testing.F) {
	f.Add(marshal(f, &pb.CreateJobRequest{PolicyId: "p", WaitForCompletion: true, ContentData: []*pb.ContentData{
		{Content: &pb.ContentData_Text{Text: "hello"}, Metadata: map[string]string{"k": "v"}},
		{Content: &pb.ContentData_ImageUrl{ImageUrl: "https://example.com/x.png"}},
	}, Webhook: &pb.CreateJobRequest_Webhook{Url: "https://example.com", ExtraHeaders: map[string]string{"a": "b"}}}))
	f.Add(marshal(f, &pb.ListJobsRequest{PageSize: 5, PageToken: "t", Query: &pb.ListJobsRequest_Query{
		Status: pb.JobStatus_JOB_STATUS_COMPLETED, CreatedTimeRange: &pb.TimeRange{Inclusive: true}}}))
	f.Add(marshal(f, &pb.EvaluateRequest{PolicyId: "p", Options: map[string]string{"ocr": "true"}}))
	f.Add([]byte{0x0a, 0x02, 0xc3, 0x28})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []proto.Message{&pb.CreateJobRequest{}, &pb.EvaluateRequest{}, &pb.ListJobsRequest{}, &pb.GetJobRequest{}} {
			if err := decode(t, b, m); err != nil {
				require.Equal(t, domain.InvalidArgument, domain.ErrorCode(err))
				continue
			}
			_, err := proto.Marshal(m)
			require.NoError(t, err, "a message let through re-encodes")
			requireCleanStrings(t, m.ProtoReflect())
		}
	})
}

func requireCleanStrings(t *testing.T, m protoreflect.Message) {
	t.Helper()
	check := func(v protoreflect.Value, fd protoreflect.FieldDescriptor) {
		switch fd.Kind() {
		case protoreflect.StringKind:
			require.False(t, strings.ContainsRune(v.String(), 0), "NUL in %s", fd.Name())
		case protoreflect.MessageKind:
			requireCleanStrings(t, v.Message())
		}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				check(v.List().Get(i), fd)
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				require.False(t, strings.ContainsRune(k.String(), 0), "NUL in a key of %s", fd.Name())
				check(mv, fd.MapValue())
				return true
			})
		default:
			check(v, fd)
		}
		return true
	})
}
