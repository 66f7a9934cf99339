package file

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/soakd/soakd/sources"
)

// Split reports whether the format writes one file per table for these
// schemas (CSV and COPY have a column layout per table; line protocol
// carries the measurement on every line).
func (f Format) Split(schemas []*sources.Schema) bool {
	return f.PerTable() && len(schemas) > 1
}

// Output is one destination of a data file: a buffered writer on a file,
// or on standard output.
type Output struct {
	// Schema is the one table written here; nil when every table goes to
	// this output (line protocol).
	Schema *sources.Schema
	Name   string
	W      *bufio.Writer
	// File is the file W writes to, standard output too when it is one;
	// nil for any other writer. A writer that gathers its bytes from
	// several buffers writes them to it directly (writev), after flushing W.
	File *os.File
	f    *os.File // nil for standard output, which is never closed
}

// OpenOutputs opens the output(s) for schemas at path ("-" = stdout):
// one, or one per table (TableFile) when the format splits them. CSV
// outputs start with their header unless appending to a non-empty file.
// On error everything already opened is closed.
func OpenOutputs(path string, f Format, schemas []*sources.Schema, appendMode bool, stdout io.Writer) ([]*Output, error) {
	var outs []*Output
	add := func(sc *sources.Schema, name string) error {
		o := &Output{Schema: sc, Name: name}
		empty := true
		if name == "-" {
			o.W = bufio.NewWriterSize(stdout, 1<<20)
			o.File, _ = stdout.(*os.File)
		} else {
			flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			if appendMode {
				flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
			}
			fh, err := os.OpenFile(name, flag, 0o644)
			if err != nil {
				var pe *os.PathError
				if errors.As(err, &pe) {
					err = pe.Err // its "open NAME: " would say the name twice
				}
				return fmt.Errorf("cannot open %s: %w", name, err)
			}
			if st, err := fh.Stat(); err == nil && st.Size() > 0 {
				empty = false
			}
			o.f, o.File, o.W = fh, fh, bufio.NewWriterSize(fh, 1<<20)
		}
		outs = append(outs, o)
		if sc != nil && empty {
			if _, err := o.W.Write(f.Header(sc)); err != nil {
				return fmt.Errorf("cannot write the header of %s: %w", name, err)
			}
		}
		return nil
	}
	var err error
	switch {
	case f.Split(schemas):
		for _, sc := range schemas {
			if err = add(sc, TableFile(path, sc.Measurement)); err != nil {
				break
			}
		}
	case f.PerTable() && len(schemas) == 1:
		err = add(schemas[0], path)
	default:
		err = add(nil, path)
	}
	if err != nil {
		_ = CloseOutputs(outs)
		return nil, err
	}
	return outs, nil
}

// CloseOutputs flushes every output and closes its file.
func CloseOutputs(outs []*Output) error {
	var errs []error
	for _, o := range outs {
		if err := o.W.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("cannot flush %s: %w", o.Name, err))
		}
		if o.f != nil {
			if err := o.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("cannot close %s: %w", o.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}
