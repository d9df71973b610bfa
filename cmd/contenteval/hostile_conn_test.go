package main

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// hostileProcess builds the binary and prepares a database with a policy
// and three keys: a valid one, the same with its signature broken, and a
// revoked one.
type hostileProcess struct {
	bin, dir, dbURL, keyFile    string
	valid, forged, revoked, pol string
}

func prepareHostileProcess(t *testing.T) hostileProcess {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and sends hundreds of MiB")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc (Linux) to read a process's peak RSS")
	}
	ctx := context.Background()
	h := hostileProcess{bin: buildBinary(t), dir: t.TempDir()}
	h.dbURL, h.keyFile = "sqlite:"+filepath.Join(h.dir, "ce.db"), filepath.Join(h.dir, "jwt.pem")
	cfg := testConfig(t)
	cfg.DatabaseURL, cfg.JWTKeyFile = h.dbURL, h.keyFile
	m := &Main{Config: cfg, Stdout: io.Discard, Stderr: io.Discard}
	require.NoError(t, m.Open(ctx, true))
	defer m.Close()
	a, err := createAccount(ctx, m, "hostile", domain.AccountPolicyFirst)
	require.NoError(t, err)
	_, h.valid, err = m.Keys.Issue(ctx, a.ID, "valid", 0)
	require.NoError(t, err)
	// Flip a character of the signature: well formed, signed by no one.
	sig, flip := strings.LastIndex(h.valid, ".")+1, byte('A')
	if h.valid[sig] == flip {
		flip = 'B'
	}
	h.forged = h.valid[:sig] + string(flip) + h.valid[sig+1:]
	k, revoked, err := m.Keys.Issue(ctx, a.ID, "revoked", 0)
	require.NoError(t, err)
	_, err = m.Keys.Revoke(ctx, k.ID)
	require.NoError(t, err)
	h.revoked = revoked
	p, _, err := m.Policies.Create(ctx, a, "main", testPolicyText)
	require.NoError(t, err)
	h.pol = p.ID
	return h
}

// TestHostileHTTP2FramesMemory: before its first request, an HTTP/2
// connection on the shared port was buffered whole until its first HEADERS
// (cmux): the preface then 1 MiB frames of an unknown type took the server
// to 1.8 GB on one connection, 3.5 GB on four. Now at most 4 KiB of a
// connection is read to route it, a frame over 16 KiB before the first
// request closes it, and a connection of small frames goes to grpc-go,
// which discards unknown frames.
func TestHostileHTTP2FramesMemory(t *testing.T) {
	h := prepareHostileProcess(t)
	const conns, perConn = 4, 64 << 20
	for _, tc := range []struct {
		name      string
		settings  bool // a SETTINGS frame first, as grpc-go wants
		frameSize int
	}{
		{"1 MiB frames of an unknown type", false, 1 << 20},
		{"16 KiB frames of an unknown type after SETTINGS", true, 16 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startProcess(t, h.bin, h.dir, h.dbURL, h.keyFile)
			before := srv.peakRSS(t)
			frame := make([]byte, 9+tc.frameSize)
			frame[0], frame[1], frame[2], frame[3] = byte(tc.frameSize>>16), byte(tc.frameSize>>8), byte(tc.frameSize), 0xee
			var wg sync.WaitGroup
			sent := make([]int64, conns)
			for i := range conns {
				wg.Go(func() { sent[i] = floodFrames(t, srv.url, tc.settings, frame, perConn) })
			}
			wg.Wait()
			after := srv.peakRSS(t)
			var total int64
			for _, n := range sent {
				total += n
			}
			growth := after - before
			t.Logf("%s: %d connections sent %.1f MiB, peak RSS %.0f -> %.0f MiB, growth %.0f MiB",
				tc.name, conns, mib(total), mib(before), mib(after), mib(growth))
			require.Less(t, growth, int64(64<<20))
			// The port still serves.
			r := srv.post(h.valid, `{"policyId":"`+h.pol+`","contentData":[{"text":"hello"}]}`)
			require.Equal(t, 200, r.status, "%s", r.body)
		})
	}
}

// floodFrames opens a connection, sends the HTTP/2 preface and frame until
// limit bytes or the server closes it, and returns what it sent.
func floodFrames(t *testing.T, url string, settings bool, frame []byte, limit int) int64 {
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Error(err)
		return 0
	}
	defer c.Close()
	_ = c.SetWriteDeadline(time.Now().Add(2 * time.Minute))
	start := []byte(http2.ClientPreface)
	if settings {
		start = append(start, 0, 0, 0, byte(http2.FrameSettings), 0, 0, 0, 0, 0)
	}
	n, err := c.Write(start)
	sent := int64(n)
	for err == nil && sent < int64(limit) {
		n, err = c.Write(frame)
		sent += int64(n)
	}
	return sent
}

// TestHostileGRPCUnauthenticatedMemory: grpc-go read a unary request whole
// (30 MiB) before the interceptor refused its key: 32 such calls took the
// server from 102 to 2,046 MiB. Now a key this server did not sign is
// refused on the call's headers, and a revoked one before its request is
// read; REST refuses first too (+0 MiB).
func TestHostileGRPCUnauthenticatedMemory(t *testing.T) {
	h := prepareHostileProcess(t)
	const calls = 8
	req, err := proto.Marshal(&pb.CreateJobRequest{PolicyId: h.pol,
		ContentData: []*pb.ContentData{textData(strings.Repeat("lorem ipsum ", 30<<20/12), nil)}})
	require.NoError(t, err)
	for _, tc := range []struct{ name, token string }{
		{"no key", ""},
		{"a forged key", h.forged},
		{"a revoked key", h.revoked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startProcess(t, h.bin, h.dir, h.dbURL, h.keyFile)
			conn, err := grpc.NewClient(strings.TrimPrefix(srv.url, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			defer conn.Close()
			ctx := context.Background()
			if tc.token != "" {
				ctx = bearer(ctx, tc.token)
			}
			before := srv.peakRSS(t)
			errs := make([]error, calls)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() { errs[i] = invokeRaw(ctx, conn, pb.GatewayService_CreateJob_FullMethodName, req) })
			}
			wg.Wait()
			after := srv.peakRSS(t)
			growth := after - before
			t.Logf("%s: %d x %.1f MiB, peak RSS %.0f -> %.0f MiB, growth %.0f MiB",
				tc.name, calls, mib(int64(len(req))), mib(before), mib(after), mib(growth))
			for _, err := range errs {
				require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
			}
			require.Less(t, growth, int64(64<<20), "unauthenticated requests are not read")
			_, err = pb.NewGatewayServiceClient(conn).ListJobs(bearer(context.Background(), h.valid), &pb.ListJobsRequest{})
			require.NoError(t, err, "the connection still serves")
		})
	}
}
