package portshare

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// protocol is the server a connection is handed to.
type protocol int

const (
	toHTTP protocol = iota
	toGRPC
)

const (
	// sniffBudget bounds what is read of a connection before it is handed
	// over (and replayed to the server that takes it). A gRPC client's
	// preface, SETTINGS, WINDOW_UPDATE and first HEADERS take well under
	// 1 KiB; an HTTP/1 request is recognised on its first byte.
	sniffBudget = 4 << 10
	// maxFrameBeforeRequest is HTTP/2's initial SETTINGS_MAX_FRAME_SIZE: a
	// client must not send a larger frame until the server announces more,
	// and nothing is announced before the first request.
	maxFrameBeforeRequest = 16 << 10
	frameHeaderLen        = 9
)

var (
	// errMalformed is HTTP/2 no server would accept: the connection is
	// closed.
	errMalformed = errors.New("malformed HTTP/2 before the first request")
	// errUndecided is a connection that spent sniffBudget without showing
	// its first request's content-type.
	errUndecided = errors.New("no decision within the sniff budget")
)

// emptySettings is a SETTINGS frame with no parameter. Clients that wait
// for the server's SETTINGS before their first request (grpc-go, grpc-java)
// get it at once; the gRPC server sends its own after the hand-over, which
// HTTP/2 allows.
var emptySettings = []byte{0, 0, 0, byte(http2.FrameSettings), 0, 0, 0, 0, 0}

// sniffer reads the start of one connection into buf, which never grows
// past sniffBudget.
type sniffer struct {
	conn         net.Conn
	buf          []byte
	settingsSent bool
}

// sniff tells which server speaks what conn starts with, reading until
// deadline at most sniffBudget bytes, and returns them for replay. Without
// grpc every connection is HTTP once its first byte comes. Not the
// HTTP/2 preface: HTTP/1, for REST. The preface: HTTP/2, which goes to
// gRPC when its first request's content-type is application/grpc*, and
// also when the budget ends before that header (REST does not speak
// HTTP/2, grpc-go answers any other HTTP/2 request with 415). A frame over
// the initial maximum size, or a header block that does not decode, is an
// error.
func sniff(conn net.Conn, deadline time.Time, grpc bool) (protocol, []byte, error) {
	if err := conn.SetDeadline(deadline); err != nil {
		return 0, nil, err
	}
	s := &sniffer{conn: conn, buf: make([]byte, 0, sniffBudget)}
	p, err := s.decide(grpc)
	if errors.Is(err, errUndecided) {
		p, err = toGRPC, nil
	}
	if err != nil {
		return 0, nil, err
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return 0, nil, err
	}
	return p, s.buf, nil
}

func (s *sniffer) decide(grpc bool) (protocol, error) {
	for i := range len(http2.ClientPreface) {
		if err := s.fill(i + 1); err != nil {
			return 0, err
		}
		if s.buf[i] != http2.ClientPreface[i] || !grpc {
			return toHTTP, nil
		}
	}
	return s.firstRequest(len(http2.ClientPreface))
}

// fill reads until buf holds n bytes.
func (s *sniffer) fill(n int) error {
	if n > cap(s.buf) {
		return errUndecided
	}
	for len(s.buf) < n {
		m, err := s.conn.Read(s.buf[len(s.buf):cap(s.buf)])
		s.buf = s.buf[:len(s.buf)+m]
		if err != nil && len(s.buf) < n {
			return err
		}
	}
	return nil
}

// firstRequest reads frames from off until the first request's
// content-type shows or its header block ends.
func (s *sniffer) firstRequest(off int) (protocol, error) {
	var contentType *string
	dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.Name == "content-type" && contentType == nil {
			v := f.Value
			contentType = &v
		}
	})
	dec.SetMaxStringLength(sniffBudget)
	var inBlock uint32 // the stream whose header block is open, or 0
	for {
		if err := s.fill(off + frameHeaderLen); err != nil {
			return 0, err
		}
		h := s.buf[off : off+frameHeaderLen]
		length := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		typ, flags := http2.FrameType(h[3]), http2.Flags(h[4])
		stream := binary.BigEndian.Uint32(h[5:9]) & (1<<31 - 1)
		if length > maxFrameBeforeRequest {
			return 0, errMalformed
		}
		start := off + frameHeaderLen
		if err := s.fill(start + length); err != nil {
			return 0, err
		}
		payload := s.buf[start : start+length]
		off = start + length
		if inBlock != 0 && (typ != http2.FrameContinuation || stream != inBlock) {
			return 0, errMalformed
		}
		var fragment []byte
		switch typ {
		case http2.FrameSettings:
			if err := s.answerSettings(flags); err != nil {
				return 0, err
			}
			continue
		case http2.FrameHeaders:
			var ok bool
			if fragment, ok = headerBlockFragment(payload, flags); !ok || stream == 0 {
				return 0, errMalformed
			}
		case http2.FrameContinuation:
			if inBlock == 0 {
				return 0, errMalformed
			}
			fragment = payload
		default: // WINDOW_UPDATE, PING, PRIORITY, unknown types: HTTP/2 lets them come first
			continue
		}
		if _, err := dec.Write(fragment); err != nil {
			return 0, errMalformed
		}
		if contentType != nil {
			if strings.HasPrefix(*contentType, "application/grpc") {
				return toGRPC, nil
			}
			return toHTTP, nil
		}
		if flags.Has(http2.FlagHeadersEndHeaders) {
			if err := dec.Close(); err != nil { // a block cut short
				return 0, errMalformed
			}
			return toHTTP, nil
		}
		inBlock = stream
	}
}

// answerSettings sends our SETTINGS once, on the client's first.
func (s *sniffer) answerSettings(flags http2.Flags) error {
	if flags.Has(http2.FlagSettingsAck) || s.settingsSent {
		return nil
	}
	s.settingsSent = true
	_, err := s.conn.Write(emptySettings)
	return err
}

// headerBlockFragment strips a HEADERS payload's padding and priority.
func headerBlockFragment(p []byte, flags http2.Flags) ([]byte, bool) {
	pad := 0
	if flags.Has(http2.FlagHeadersPadded) {
		if len(p) < 1 {
			return nil, false
		}
		pad, p = int(p[0]), p[1:]
	}
	if flags.Has(http2.FlagHeadersPriority) {
		if len(p) < 5 {
			return nil, false
		}
		p = p[5:]
	}
	if pad > len(p) {
		return nil, false
	}
	return p[:len(p)-pad], true
}
