package main

// The two loaders. Both send one pre-encoded request and do not decode the
// response beyond its status, so the loader spends as little of the shared
// machine's CPU as it can on either protocol: REST over a pool of
// keep-alive HTTP/1.1 connections written and read in the calling goroutine
// (jobsload's rawClient), gRPC over a few HTTP/2 connections with a codec
// that passes bytes through.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
)

type restLoader struct {
	addr    string
	request []byte
	// done is what a successful answer contains.
	done []byte
	idle chan *restConn
}

type restConn struct {
	c   net.Conn
	r   *bufio.Reader
	buf bytes.Buffer
}

// newRESTLoader posts body to path; an answer is a success when it is a
// 200 containing done.
func newRESTLoader(addr, token, path string, body []byte, done string) *restLoader {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, addr, token, len(body))
	b.Write(body)
	return &restLoader{addr: addr, request: b.Bytes(), done: []byte(done), idle: make(chan *restConn, 1024)}
}

func (l *restLoader) call() error {
	var c *restConn
	select {
	case c = <-l.idle:
	default:
		nc, err := net.Dial("tcp", l.addr)
		if err != nil {
			return err
		}
		c = &restConn{c: nc, r: bufio.NewReaderSize(nc, 16<<10)}
	}
	keep, err := l.roundTrip(c)
	if err != nil || !keep {
		c.c.Close()
		return err
	}
	select {
	case l.idle <- c:
	default:
		c.c.Close()
	}
	return nil
}

func (l *restLoader) roundTrip(c *restConn) (bool, error) {
	if err := c.c.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return false, err
	}
	if _, err := c.c.Write(l.request); err != nil {
		return false, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return false, err
	}
	c.buf.Reset()
	_, err = c.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(c.buf.Bytes(), l.done) {
		return false, fmt.Errorf("status %d: %.200s", resp.StatusCode, c.buf.Bytes())
	}
	return !resp.Close, nil
}

func (l *restLoader) close() {
	for {
		select {
		case c := <-l.idle:
			c.c.Close()
		default:
			return
		}
	}
}

type grpcLoader struct {
	conns   []*grpc.ClientConn
	next    atomic.Uint64
	request []byte
	ctx     context.Context
}

func newGRPCLoader(addr, token string, request []byte, conns int) (*grpcLoader, error) {
	l := &grpcLoader{request: request, ctx: metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)}
	for range max(conns, 1) {
		c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{})))
		if err != nil {
			l.close()
			return nil, err
		}
		l.conns = append(l.conns, c)
	}
	return l, nil
}

func (l *grpcLoader) call() error {
	c := l.conns[l.next.Add(1)%uint64(len(l.conns))]
	var resp []byte
	if err := c.Invoke(l.ctx, pb.GatewayService_CreateJob_FullMethodName, &l.request, &resp); err != nil {
		return err
	}
	if status := jobStatus(resp); status != pb.JobStatus_JOB_STATUS_COMPLETED {
		return fmt.Errorf("job %s", status)
	}
	return nil
}

// jobStatus reads CreateJobResponse.job.status from the wire without
// decoding the rest, as the REST loader only looks for the status text.
func jobStatus(resp []byte) pb.JobStatus {
	job := field(resp, 1)
	if job == nil {
		return pb.JobStatus_JOB_STATUS_UNSPECIFIED
	}
	for len(job) > 0 {
		num, typ, n := protowire.ConsumeTag(job)
		if n < 0 {
			break
		}
		job = job[n:]
		if num == 3 && typ == protowire.VarintType {
			v, _ := protowire.ConsumeVarint(job)
			return pb.JobStatus(v)
		}
		if n = protowire.ConsumeFieldValue(num, typ, job); n < 0 {
			break
		}
		job = job[n:]
	}
	return pb.JobStatus_JOB_STATUS_UNSPECIFIED
}

// field returns the bytes of the first length-delimited field num of b.
func field(b []byte, num protowire.Number) []byte {
	for len(b) > 0 {
		n, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return nil
		}
		b = b[k:]
		if n == num && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b)
			return v
		}
		if k = protowire.ConsumeFieldValue(n, typ, b); k < 0 {
			return nil
		}
		b = b[k:]
	}
	return nil
}

func (l *grpcLoader) close() {
	for _, c := range l.conns {
		_ = c.Close()
	}
}

// rawCodec sends and receives message bytes as they are.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}
