package postgres

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soakd/soakd/sources"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current DDL")

// TestDDLGolden pins the SQL each dialect runs and sends, for a TSBS-like
// cpu table and a table with int fields and names that need quoting.
// Only the postgres dialect (and timescaledb without the extension) is
// also checked against a live server; the others are checked here.
func TestDDLGolden(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, query string }{
		{"postgres", ""},
		{"postgres_dedup", "dedup=true"},
		{"postgres_dedup_unnest", "dedup=true&insert=unnest"},
		{"timescaledb", "dialect=timescaledb&chunk_interval=12h"},
		{"timescaledb_dedup", "dialect=timescaledb&dedup=true"},
		{"kwdb", "dialect=kwdb"},
		{"kwdb_dedup", "dialect=kwdb&dedup=true&ts_database=bench"},
		{"matrixdb", "dialect=matrixdb"},
		{"greenplum_dedup", "dialect=greenplum&dedup=true"},
		{"cockroach", "dialect=cockroach"},
		{"cockroach_dedup", "dialect=cockroach&dedup=true"},
		{"postgres_tsbs", "layout=tsbs"},
		{"timescaledb_tsbs", "dialect=timescaledb&layout=tsbs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _, err := ParseURL(mustURL(t, "postgres://h/db?"+tc.query))
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString("-- " + tc.query + " (insert=" + c.Method.String() + ")\n")
			for _, q := range preamble(c) {
				b.WriteString(q + ";\n")
			}
			schemas := []*sources.Schema{cpuSchema("cpu", 2), mixedSchema("Trucks", 2)}
			if c.Layout == TSBSLayout {
				// One tags table: tables that share their tags, some numeric.
				trucks := mixedSchema("readings", 2)
				diag := mixedSchema("diagnostics", 2)
				diag.Fields = diag.Fields[:2]
				trucks.NumericTags = []bool{false, false, true}
				diag.NumericTags = trucks.NumericTags
				schemas = []*sources.Schema{trucks, diag}
				b.WriteString("\n")
				for _, q := range tsbsTagsDDL(trucks) {
					b.WriteString(q + ";\n")
				}
			}
			for i, s := range schemas {
				p, err := newPlan(i, c, s)
				if err != nil {
					t.Fatal(err)
				}
				stmts := createTable(c, p)
				b.WriteString("\n" + stmts[0] + ";\n")
				if c.Dialect == TimescaleDB {
					b.WriteString("-- when the timescaledb extension is present:\n" + hypertable(c, p) + ";\n")
				}
				for _, q := range stmts[1:] {
					b.WriteString(q + ";\n")
				}
				if c.Layout == TSBSLayout {
					b.WriteString("-- writes:\n" + p.copySQL + ";\n")
					continue
				}
				b.WriteString("-- writes:\n" + p.copySQL + ";\n" + p.unnestSQL + ";\n" + p.insertStmt(2).sql + ";\n")
				if p.stage != "" {
					b.WriteString("-- dedup with copy, per session and per batch:\n" + p.stageCreate + ";\n" + p.stageCopy + ";\n" + p.stageMerge + ";\n")
				}
			}
			file := filepath.Join("testdata", "ddl_"+tc.name+".golden")
			got := b.String()
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -run TestDDLGolden -update)", err)
			}
			if got != string(want) {
				t.Errorf("DDL differs from %s (check, then go test -run TestDDLGolden -update):\n%s", file, got)
			}
		})
	}
}

func TestChunks(t *testing.T) {
	t.Parallel()
	c, _, _ := ParseURL(mustURL(t, "postgres://h/db?insert=insert"))
	p, err := newPlan(0, c, cpuSchema("cpu", 2)) // 14 columns
	if err != nil {
		t.Fatal(err)
	}
	if p.chunkRows != 4096 {
		t.Fatalf("chunkRows = %d, want 4096 (14 columns: 4096*14 params fit in 65535)", p.chunkRows)
	}
	sizes := map[int]bool{}
	for _, n := range []int{1, 2, 3, 7, 4095, 4096, 4097, 10000, 65537} {
		next := 0
		p.chunks(n, func(start, rows int) {
			if start != next {
				t.Fatalf("n=%d: chunk starts at %d, want %d", n, start, next)
			}
			if rows&(rows-1) != 0 || rows > p.chunkRows || rows*p.nCols > maxParams {
				t.Fatalf("n=%d: chunk of %d rows", n, rows)
			}
			sizes[rows] = true
			next += rows
		})
		if next != n {
			t.Fatalf("n=%d: chunks cover %d rows", n, next)
		}
	}
	if len(sizes) > 13 {
		t.Errorf("%d distinct statement sizes, want at most log2(4096)+1", len(sizes))
	}
	wide := &sources.Schema{Measurement: "wide", TagKeys: []string{"id"}, Tags: newTagger(1, []string{"id"}, 0)}
	for i := range 1000 {
		wide.Fields = append(wide.Fields, sources.Field{Name: "c" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), Kind: sources.Int})
	}
	p, err = newPlan(0, c, wide)
	if err != nil {
		t.Fatal(err)
	}
	if p.chunkRows != 64 { // 64*1002 <= 65535 < 128*1002
		t.Errorf("1002 columns: chunkRows = %d, want 64", p.chunkRows)
	}
}
