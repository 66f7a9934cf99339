package file

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// TestConformance runs the sink suite for every format: a fresh file per
// sink, whose data lines are counted (CSV headers aside). The file sink
// has no network target.
func TestConformance(t *testing.T) {
	for _, f := range []Format{Influx, CSV, PGCopy} {
		t.Run(f.String(), func(t *testing.T) {
			dir := t.TempDir()
			n := 0
			sinktest.Run(t, sinktest.Harness{
				Kinds: []sources.Kind{sources.Series},
				Open: func(t *testing.T, _ string, o sinks.Options) sinktest.Target {
					n++
					path := filepath.Join(dir, "out"+strconv.Itoa(n)+f.Ext())
					s, err := Open(context.Background(), mustURL(t, "file://"+path+"?format="+f.String()), o)
					if err != nil {
						t.Fatal(err)
					}
					return sinktest.Target{Sink: s, Count: func(t *testing.T) int { return dataLines(t, path, f, o.Schemas) }}
				},
			})
		})
	}
}

// dataLines counts the rows in the file(s) a sink wrote at path.
func dataLines(t *testing.T, path string, f Format, schemas []*sources.Schema) int {
	t.Helper()
	files := []string{path}
	if f.Split(schemas) {
		files = files[:0]
		for _, s := range schemas {
			files = append(files, TableFile(path, s.Measurement))
		}
	}
	n := 0
	for _, name := range files {
		b, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(b, []byte{'\n'})
		if f == CSV && lines > 0 {
			lines-- // the header
		}
		n += lines
	}
	return n
}
