package portshare

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// frame encodes one HTTP/2 frame.
func frame(typ http2.FrameType, flags http2.Flags, stream uint32, payload []byte) []byte {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	fr.AllowIllegalWrites = true
	require.NoError(nil, fr.WriteRawFrame(typ, flags, stream, payload))
	return b.Bytes()
}

func headerBlock(fields ...string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return b.Bytes()
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// largeFrameHeader is the header of a frame of n bytes, without them.
func largeFrameHeader(typ http2.FrameType, n int) []byte {
	return []byte{byte(n >> 16), byte(n >> 8), byte(n), byte(typ), 0, 0, 0, 0, 1}
}

func TestSniff(t *testing.T) {
	preface := []byte(http2.ClientPreface)
	settings := frame(http2.FrameSettings, 0, 0, nil)
	grpcHeaders := headerBlock(":method", "POST", ":path", "/clavata.gateway.v1.GatewayService/CreateJob", "content-type", "application/grpc+proto")
	restHeaders := headerBlock(":method", "GET", ":path", "/v1/jobs")
	unknown := frame(0xee, 0, 0, make([]byte, 1000))
	for _, tc := range []struct {
		name  string
		input []byte
		want  protocol
		err   error // nil: decided
		// replayed is how much of input comes back (0: all of it)
		replayed int
		settings bool // our SETTINGS is written back
		noGRPC   bool // gRPC is off
	}{
		{name: "HTTP/1 request", input: []byte("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n"), want: toHTTP},
		{name: "HTTP/1 PRI with another path", input: []byte("PRI /x HTTP/1.1\r\n\r\n"), want: toHTTP},
		{name: "gRPC", input: concat(preface, settings, frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, grpcHeaders)), want: toGRPC, settings: true},
		{name: "gRPC, padded and prioritised, after a window update", input: concat(preface, settings,
			frame(http2.FrameWindowUpdate, 0, 0, []byte{0, 1, 0, 0}),
			frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersPadded|http2.FlagHeadersPriority, 1,
				concat([]byte{3}, []byte{0, 0, 0, 0, 16}, grpcHeaders, []byte{0, 0, 0}))), want: toGRPC, settings: true},
		{name: "gRPC content-type in a continuation", input: concat(preface,
			frame(http2.FrameHeaders, 0, 1, grpcHeaders[:10]),
			frame(http2.FrameContinuation, http2.FlagContinuationEndHeaders, 1, grpcHeaders[10:])), want: toGRPC},
		{name: "gRPC off: the preface goes to HTTP unanswered", input: concat(preface, settings), want: toHTTP, noGRPC: true, replayed: 1},
		{name: "HTTP/2 without gRPC", input: concat(preface, settings, frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, restHeaders)), want: toHTTP, settings: true},
		{name: "unknown frames past the budget go to gRPC undecided", input: concat(preface, bytes.Repeat(unknown, 8)), want: toGRPC, replayed: sniffBudget},
		{name: "a 1 MiB frame before the first request", input: concat(preface, largeFrameHeader(0xee, 1<<20)), err: errMalformed},
		{name: "a 1 MiB HEADERS frame", input: concat(preface, largeFrameHeader(http2.FrameHeaders, 1<<20)), err: errMalformed},
		{name: "a frame between HEADERS and its CONTINUATION", input: concat(preface,
			frame(http2.FrameHeaders, 0, 1, grpcHeaders[:10]), settings), err: errMalformed},
		{name: "a CONTINUATION without HEADERS", input: concat(preface, frame(http2.FrameContinuation, http2.FlagContinuationEndHeaders, 1, grpcHeaders)), err: errMalformed},
		{name: "HEADERS on stream 0", input: concat(preface, frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 0, grpcHeaders)), err: errMalformed},
		{name: "padding longer than the frame", input: concat(preface, frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersPadded, 1, []byte{200, 1, 2})), err: errMalformed},
		{name: "a header block that does not decode", input: concat(preface, frame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, []byte{0xff, 0xff, 0xff, 0xff})), err: errMalformed},
		{name: "the client leaves halfway through the preface", input: preface[:10], err: io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, client := net.Pipe()
			written := make(chan []byte, 1)
			go func() {
				_, _ = client.Write(tc.input)
				if tc.err == io.EOF {
					_ = client.Close()
				}
				// Collect what the sniffer writes back until the test ends.
				var back bytes.Buffer
				_, _ = io.Copy(&back, client)
				written <- back.Bytes()
			}()
			got, replay, err := sniff(server, time.Now().Add(time.Minute), !tc.noGRPC)
			_ = server.Close()
			back := <-written
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			want := tc.input
			if tc.replayed > 0 {
				want = tc.input[:tc.replayed]
			}
			require.True(t, bytes.HasPrefix(tc.input, replay), "what was read is replayed as it came")
			require.GreaterOrEqual(t, len(replay), min(len(want), 1))
			require.LessOrEqual(t, len(replay), sniffBudget)
			if tc.settings {
				require.Equal(t, emptySettings, back)
			} else {
				require.Empty(t, back)
			}
		})
	}
}

// TestSniffTimesOut: a client that opens and says nothing is cut at the
// deadline (an already past one: no waiting).
func TestSniffTimesOut(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	_, _, err := sniff(server, time.Now().Add(-time.Second), true)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "%v", err)
}
