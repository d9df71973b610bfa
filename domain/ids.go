package domain

import (
	"crypto/rand"
	"encoding/binary"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
)

// NewID returns a new time-ordered unique id (UUIDv7), the id of every
// object the domain creates; a v4 UUID if the clock cannot give a v7.
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// NewIDAt returns a new unique UUIDv7 whose time is t's millisecond: the
// id of a job created at t (docs/operations.md, "Retention"), so that a
// window of creation times is a range of ids, the key the history's
// storage is partitioned and pruned by. Ids made in the same millisecond
// by this process increase in the order they are made.
func NewIDAt(t time.Time) string {
	ms := t.UnixMilli()
	idAt.Lock()
	if ms != idAt.ms {
		// A random start, rand_a's 12 bits and rand_b's 62 with the top
		// bit clear, so that the ids of the same millisecond count up
		// without wrapping.
		var b [10]byte
		if _, err := rand.Read(b[:]); err != nil {
			idAt.Unlock()
			panic("domain: no randomness for an id: " + err.Error())
		}
		idAt.ms, idAt.a, idAt.b = ms, binary.BigEndian.Uint16(b[:2])&0x0fff, binary.BigEndian.Uint64(b[2:])>>3
	} else {
		idAt.b++
	}
	a, b := idAt.a, idAt.b
	idAt.Unlock()
	var u uuid.UUID
	var tb [8]byte
	binary.BigEndian.PutUint64(tb[:], uint64(ms))
	copy(u[:6], tb[2:])
	binary.BigEndian.PutUint16(u[6:], 0x7000|a)
	binary.BigEndian.PutUint64(u[8:], 0x8000000000000000|b)
	return u.String()
}

// idAt is NewIDAt's last millisecond and the random bits it counts up.
var idAt = struct {
	sync.Mutex
	ms int64
	a  uint16
	b  uint64
}{ms: math.MinInt64}

// IDTime returns the millisecond a UUIDv7 id was made for; false for an
// id of another form.
func IDTime(id string) (time.Time, bool) {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 || len(id) != 36 {
		return time.Time{}, false
	}
	var b [8]byte
	copy(b[2:], u[:6])
	return time.UnixMilli(int64(binary.BigEndian.Uint64(b[:]))).UTC(), true
}
