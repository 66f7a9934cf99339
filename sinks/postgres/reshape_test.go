package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sources"
)

// massiveLike is a table of n fields of kind k, as the massive source's
// COLUMNS and COLUMN_TYPE make it.
func massiveLike(n int, k sources.FieldKind) *sources.Schema {
	s := cpuSchema("massive", 4)
	s.Fields = nil
	for i := range n {
		s.Fields = append(s.Fields, sources.Field{Name: "c" + string(rune('0'+i)), Kind: k})
	}
	return s
}

// ReshapeTables keeps a table of the sink's shape, rows and all, and
// drops one made for another (a column fewer or more, another field
// type), so that Prepare makes it for this shape; with create=false it
// drops nothing and says the shape differs. Bugs caught: a table of the
// right shape dropped (the sweep's reset would still empty it, but a
// hypertable's settings would go), a wider table kept (rows with NULLs),
// another type kept (values cast), a table dropped that soakd did not
// make.
func TestReshapeTables(t *testing.T) {
	srv := testserver.Postgres(t)
	ctx := context.Background()
	db := newDB(t, srv, "reshape")
	c := connect(t, db)
	columns := func() string {
		var s string
		if err := c.QueryRow(ctx, `SELECT coalesce(string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position), '')
			FROM information_schema.columns WHERE table_name = 'massive'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	prepared := func(raw string, sc *sources.Schema) *Sink {
		s := openSink(t, raw, nil, sc)
		if err := s.ReshapeTables(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// No table yet: nothing to drop.
	prepared(db, massiveLike(2, sources.Int))
	if _, err := c.Exec(ctx, "INSERT INTO massive (time, hostname) VALUES (now(), 'h')"); err != nil {
		t.Fatal(err)
	}
	prepared(db, massiveLike(2, sources.Int))
	if n := count(t, c, "massive"); n != 1 {
		t.Errorf("a table of the sink's shape was not kept: %d rows", n)
	}
	for _, tc := range []struct {
		sc   *sources.Schema
		want string
	}{
		{massiveLike(3, sources.Int), "c0 bigint, c1 bigint, c2 bigint"},
		{massiveLike(1, sources.Int), "c0 bigint"},
		{massiveLike(1, sources.Float), "c0 double precision"},
	} {
		prepared(db, tc.sc)
		if got := columns(); !strings.HasSuffix(got, "datacenter text, "+tc.want) {
			t.Errorf("columns %q, want the tags then %s", got, tc.want)
		}
	}
	s := openSink(t, withParams(db, "create", "false"), nil, massiveLike(2, sources.Float))
	if err := s.ReshapeTables(ctx); err == nil || !strings.Contains(err.Error(), "create=false") {
		t.Errorf("create=false, a table of another shape: %v", err)
	}
	if got := columns(); !strings.HasSuffix(got, "c0 double precision") {
		t.Errorf("create=false dropped or changed the table: %q", got)
	}
}
