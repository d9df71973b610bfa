package modelbackendtest

import (
	"net"
	"testing"
)

// HangUp returns the base URL (ending in /v1) of a dead model server: one
// that accepts every connection and closes it at once, until the test
// ends. A port merely closed could be taken by another test's server
// before the call is made; this one stays held.
func HangUp(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return "http://" + ln.Addr().String() + "/v1"
}
