package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"

	"github.com/contenteval/contenteval/persistence"
)

// PrivateSchema creates a schema named prefix_<random> in the PostgreSQL
// database at base and returns a URL whose search_path is that schema, so
// that a load tool's run starts from empty tables; drop removes it.
func PrivateSchema(ctx context.Context, base, prefix string) (dbURL string, drop func(), err error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	db, err := persistence.Open(ctx, base)
	if err != nil {
		return "", nil, err
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := prefix + "_" + hex.EncodeToString(b)
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		return "", nil, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		_, _ = db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		db.Close()
	}, nil
}
