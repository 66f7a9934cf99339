package testserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgTimeout bounds each helper's work against a test PostgreSQL, so that
// a server that stopped answering fails the test instead of hanging it.
const pgTimeout = 30 * time.Second

// Database returns the URL of database name on the PostgreSQL s (its URL
// names the postgres database).
func (s *Server) Database(name string) string {
	return strings.Replace(s.URL, "/postgres?", "/"+name+"?", 1)
}

// PGConn connects to the PostgreSQL at url for the rest of the test: the
// connection is closed when the test ends.
func PGConn(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	c := pgConnect(ctx, t, url)
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// PGExec runs the statements in order over one connection to the
// PostgreSQL at url, closed when they are done; the test fails at the
// first one that fails.
func PGExec(t testing.TB, url string, sqls ...string) {
	t.Helper()
	withPG(t, url, func(ctx context.Context, c *pgx.Conn) {
		for _, q := range sqls {
			if _, err := c.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	})
}

// PGCount runs q, which answers one number (a count), on the PostgreSQL
// at url over a connection of its own.
func PGCount(t testing.TB, url, q string) int64 {
	t.Helper()
	var n int64
	withPG(t, url, func(ctx context.Context, c *pgx.Conn) {
		if err := c.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	})
	return n
}

// withPG runs f over a connection of its own to the PostgreSQL at url,
// connecting and f within pgTimeout.
func withPG(t testing.TB, url string, f func(ctx context.Context, c *pgx.Conn)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	c := pgConnect(ctx, t, url)
	defer c.Close(ctx)
	f(ctx, c)
}

func pgConnect(ctx context.Context, t testing.TB, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// CreateDatabase creates database name on the PostgreSQL s and returns
// its URL.
func (s *Server) CreateDatabase(t testing.TB, name string) string {
	t.Helper()
	PGExec(t, s.URL, "CREATE DATABASE "+name)
	return s.Database(name)
}
