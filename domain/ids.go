package domain

import "github.com/google/uuid"

// NewID returns a new time-ordered unique id (UUIDv7), the id of every
// object the domain creates; a v4 UUID if the clock cannot give a v7.
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
