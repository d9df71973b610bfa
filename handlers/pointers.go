package handlers

// The generated API types mark optional fields with pointers; these three
// convert between them and the domain's plain values.

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// nonEmpty returns &s, or nil for "", so an unset string (an absent
// nextPageToken) is omitted from the JSON.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
