package main

import (
	"bytes"
	"context"
	endian "encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// silentWAV is seconds of 8 kHz 16-bit mono silence.
func silentWAV(seconds int) []byte {
	samples := 8000 * seconds
	var b bytes.Buffer
	w := func(v any) { _ = endian.Write(&b, endian.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + 2*samples))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1))    // PCM
	w(uint16(1))    // mono
	w(uint32(8000)) // sample rate
	w(uint32(16000))
	w(uint16(2))
	w(uint16(16))
	b.WriteString("data")
	w(uint32(2 * samples))
	b.Write(make([]byte, 2*samples))
	return b.Bytes()
}

// TestGRPCQuietStreamWithClientPings holds an Evaluate stream silent for
// over 40 s while the client pings every 10 s, as the JS SDK does. With
// grpc-go's default enforcement (one ping per 5 min) the server would
// answer the fourth ping with GOAWAY too_many_pings and tear the stream
// down (and grpc-js would send the call again); the service permits pings
// every 5 s, so the stream ends with its result, sent once. This is the
// one test that waits in real time: the pings are real network traffic.
// The transport does not depend on the database, so one backend suffices.
func TestGRPCQuietStreamWithClientPings(t *testing.T) {
	requireFFmpeg(t)
	t.Parallel()
	const quiet = 45 * time.Second
	env := startServer(t, persistencetest.Backends(t)[0], func(c *Config) {
		c.AllowPrivateURLs, c.ItemDeadline = true, 3*time.Minute
	})
	tok := env.PolicyFirst.Token
	policyID := env.createPolicy(tok, "p")

	// The audio arrives after the quiet period: until then the server has
	// nothing to send on the stream.
	var fetches atomic.Int32
	audio := silentWAV(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		select {
		case <-time.After(quiet):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "audio/wav")
		_, _ = w.Write(audio)
	}))
	defer srv.Close()

	conn := env.grpcConn(grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 10 * time.Second, Timeout: 10 * time.Second}))
	gw := pb.NewGatewayServiceClient(conn)
	captions := "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\ni will kill you\n"
	start := time.Now()
	stream, err := gw.Evaluate(bearer(context.Background(), tok), &pb.EvaluateRequest{PolicyId: policyID, ContentData: []*pb.ContentData{
		{Content: &pb.ContentData_AudioUrl{AudioUrl: srv.URL + "/a.wav"}, Captions: &captions},
	}})
	require.NoError(t, err)
	msg, err := stream.Recv()
	require.NoError(t, err, "the stream survived the quiet period")
	require.GreaterOrEqual(t, time.Since(start), quiet, "the stream was quiet as long as intended")
	require.Equal(t, pb.Outcome_OUTCOME_TRUE, section(t, msg.PolicyEvaluationReport, "Threat").ReviewResult.Outcome)
	_, err = stream.Recv()
	require.Equal(t, io.EOF, err)

	// Sent once: one fetch, one job.
	require.Equal(t, int32(1), fetches.Load())
	list, err := gw.ListJobs(bearer(context.Background(), tok), &pb.ListJobsRequest{})
	require.NoError(t, err)
	require.Len(t, list.Jobs, 1)
	require.Equal(t, msg.JobUuid, list.Jobs[0].JobUuid)
}
