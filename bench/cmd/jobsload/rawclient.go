package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"time"
)

// rawClient sends one pre-serialized HTTP/1.1 request over a pool of
// keep-alive connections and parses the response with http.ReadResponse,
// in the calling goroutine. net/http's Transport runs two goroutines per
// connection and hands every request and response between them; on this
// 2-core machine, shared with the server and the database, that cost the
// loader more CPU per request than the database spent. This is the wrk
// approach, minus the C.
type rawClient struct {
	addr    string
	request []byte
	idle    chan *rawConn
	timeout time.Duration
}

type rawConn struct {
	c net.Conn
	r *bufio.Reader
}

// newRawClient prepares POST path with the headers and body on addr
// (host:port), keeping up to maxIdle connections open.
func newRawClient(addr, path string, hdr http.Header, body []byte, maxIdle int) *rawClient {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", path, addr)
	for k, vs := range hdr {
		for _, v := range vs {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return &rawClient{addr: addr, request: b.Bytes(), idle: make(chan *rawConn, maxIdle), timeout: 60 * time.Second}
}

// post sends the request and reads the response body into buf.
func (rc *rawClient) post(buf *bytes.Buffer) (int, error) {
	var c *rawConn
	select {
	case c = <-rc.idle:
	default:
		nc, err := net.Dial("tcp", rc.addr)
		if err != nil {
			return 0, err
		}
		c = &rawConn{c: nc, r: bufio.NewReaderSize(nc, 16<<10)}
	}
	status, keep, err := rc.roundTrip(c, buf)
	if err != nil || !keep {
		c.c.Close()
		return status, err
	}
	select {
	case rc.idle <- c:
	default:
		c.c.Close()
	}
	return status, nil
}

func (rc *rawClient) roundTrip(c *rawConn, buf *bytes.Buffer) (status int, keep bool, err error) {
	if err := c.c.SetDeadline(time.Now().Add(rc.timeout)); err != nil {
		return 0, false, err
	}
	if _, err := c.c.Write(rc.request); err != nil {
		return 0, false, err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return 0, false, err
	}
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return resp.StatusCode, false, err
	}
	return resp.StatusCode, !resp.Close, nil
}

func (rc *rawClient) close() {
	for {
		select {
		case c := <-rc.idle:
			c.c.Close()
		default:
			return
		}
	}
}
