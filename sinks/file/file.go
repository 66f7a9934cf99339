// Package file is a series sink that writes data files like
// tsbs_generate_data: InfluxDB line protocol, CSV or PostgreSQL COPY text.
//
//	file:///data/cpu.influx                 line protocol (the default)
//	file:///data/cpu.csv?format=csv         CSV with a header line
//	file:///data/cpu.pgcopy?format=pgcopy   COPY cpu FROM STDIN input
//	-                                       line protocol on standard output
//
// Parameters: format=influx|csv|pgcopy, precision=ns|us|ms|s (influx
// timestamps), append=true (keep what the file holds; the default
// truncates it). CSV and COPY files hold one table each: a source with
// several measurements (devops-full, iot) writes one file per measurement,
// named by TableFile (out.csv -> out.cpu.csv), and cannot use standard
// output.
//
// Writes from concurrent workers are encoded in parallel and written one
// batch at a time through a buffer; Close flushes it. A Write returns once
// the batch is in the buffer or handed to the operating system.
package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sinks/urlparam"
	"github.com/soakd/soakd/sources"
)

// Config is the parsed form of a file URL.
type Config struct {
	Path      string // "-" = standard output
	Format    Format
	Precision lineproto.Precision
	Append    bool
}

// Params are the file URL's parameters.
var Params = urlparam.Set{Params: []urlparam.Param{
	{Name: "format", Type: urlparam.Enum, Choices: []string{"influx|lineprotocol|line", "csv", "pgcopy|copy|tsv"}, Fold: true, Default: "influx",
		Parse: func(s string) (any, error) { return wrap(ParseFormat(s))("format") },
		Help:  "influx (line protocol), csv (a header line, one file per measurement) or pgcopy (COPY text, one file per measurement)"},
	{Name: "precision", Type: urlparam.Enum, Choices: []string{"ns|n", "us|u|µs", "ms", "s"}, Default: "ns",
		Parse: func(s string) (any, error) { return wrap(lineproto.ParsePrecision(s))("precision") },
		Help:  "unit of the timestamps of line protocol"},
	{Name: "append", Type: urlparam.Bool, Default: "false", Help: "keep what the file holds and write after it (the default truncates it)"},
}}

// wrap names the parameter in a parse function's error.
func wrap[T any](v T, err error) func(name string) (any, error) {
	return func(name string) (any, error) {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return v, nil
	}
}

// ParseURL parses a file:// URL (or "-" via sinks.Parse).
func ParseURL(u *url.URL) (Config, error) {
	c := Config{Path: u.Host + u.Path}
	if u.Opaque != "" {
		c.Path = u.Opaque
	}
	p := Params.Read(u.Query())
	if c.Path == "" {
		p.Add(errors.New("file URL has no path (want file:///path/to/file or - for standard output)"))
	} else if c.Path != "-" && (strings.HasSuffix(c.Path, "/") || path.Base(c.Path) == "." || path.Base(c.Path) == "..") {
		p.Add(dirError(c.Path))
	}
	p.CheckUnknown("")
	c.Format, _ = p.Value("format").(Format)
	c.Precision, _ = p.Value("precision").(lineproto.Precision)
	c.Append = p.Bool("append")
	return c, p.Err()
}

// Check is the registry's CheckFunc.
func Check(u *url.URL, kind sources.Kind) error {
	if kind == sources.KV {
		return errors.New("the file sink writes series data, not key-value operations")
	}
	c, err := ParseURL(u)
	if err != nil {
		return err
	}
	// A directory that exists, named without its final /: a format of
	// one file per measurement wrote hidden files in it (DIR/.cpu, ...).
	if st, err := os.Stat(c.Path); c.Path != "-" && err == nil && st.IsDir() {
		return dirError(c.Path)
	}
	return nil
}

// dirError is the error of a file URL whose path names a directory.
func dirError(dir string) error {
	return fmt.Errorf("file URL path %s is a directory: name a file in it, e.g. file://%s (a format of one file per measurement then writes %s, ...)",
		dir, path.Join(dir, "data.csv"), TableFile(path.Join(dir, "data.csv"), "cpu"))
}

// Open is the registry's OpenFunc. It does no I/O: files are created by
// Prepare or the first Write.
func Open(_ context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
	if err := Check(u, o.Kind); err != nil {
		return nil, err
	}
	c, _ := ParseURL(u)
	s, err := New(c, o.Schemas)
	if err != nil {
		return nil, err // not a nil *Sink in a non-nil Sink
	}
	return s, nil
}

// New returns a sink writing tables of schemas as c says.
func New(c Config, schemas []*sources.Schema) (*Sink, error) {
	if c.Format.Split(schemas) && c.Path == "-" {
		return nil, fmt.Errorf("format %s writes one file per measurement and this source has %d: give a file:// path, not standard output", c.Format, len(schemas))
	}
	s := &Sink{cfg: c, schemas: schemas}
	s.pool.New = func() any { return &encState{enc: NewEncoder(c.Format, c.Precision)} }
	return s, nil
}

// Sink writes batches to one file (or one per measurement).
type Sink struct {
	cfg     Config
	schemas []*sources.Schema
	pool    sync.Pool // *encState

	mu     sync.Mutex
	outs   []*Output
	opened bool
	closed bool
}

var (
	_ sinks.Sink     = (*Sink)(nil)
	_ sinks.Preparer = (*Sink)(nil)
)

type encState struct {
	enc  RowEncoder
	bufs [][]byte // per output
}

// Stdout is where "-" writes; tests replace it.
var Stdout io.Writer = os.Stdout

// Resolution is the unit of the times the sink writes (see
// Format.Resolution): opening a workload refuses an INTERVAL finer than it.
func (s *Sink) Resolution() time.Duration { return s.cfg.Format.Resolution(s.cfg.Precision) }

// Prepare creates the file(s), writing CSV headers.
func (s *Sink) Prepare(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open()
}

func (s *Sink) open() error {
	if s.opened {
		return nil
	}
	if s.closed {
		return errors.New("file sink is closed")
	}
	outs, err := OpenOutputs(s.cfg.Path, s.cfg.Format, s.schemas, s.cfg.Append, Stdout)
	if err != nil {
		return sinks.NewError(sinks.Rejected, false, err)
	}
	s.outs, s.opened = outs, true
	return nil
}

// outputFor returns the index of the output of table schema sc.
func (s *Sink) outputFor(sc *sources.Schema) (int, error) {
	for i, o := range s.outs {
		if o.Schema == nil || o.Schema == sc {
			return i, nil
		}
	}
	return 0, fmt.Errorf("table %s is not one of the schemas the sink was opened with", sc.Measurement)
}

// Write encodes b and appends it to the file(s). Concurrent calls encode
// in parallel and write one at a time.
func (s *Sink) Write(ctx context.Context, b *sources.Batch) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, sinks.NewError(sinks.Timeout, true, err)
	}
	s.mu.Lock()
	err := s.open()
	n := len(s.outs)
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	es := s.pool.Get().(*encState)
	defer s.pool.Put(es)
	for len(es.bufs) < n {
		es.bufs = append(es.bufs, nil)
	}
	for i := range es.bufs {
		es.bufs[i] = es.bufs[i][:0]
	}
	for _, t := range b.Tables {
		if t.Len() == 0 {
			continue
		}
		oi, err := s.outputFor(t.Schema)
		if err != nil {
			return 0, sinks.NewError(sinks.Rejected, false, err)
		}
		buf := es.bufs[oi]
		for i := 0; i < t.Len(); i++ {
			buf, _ = es.enc.AppendRow(buf, t, i)
		}
		es.bufs[oi] = buf
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, sinks.NewError(sinks.Connection, false, errors.New("file sink is closed"))
	}
	total := 0
	for i, buf := range es.bufs[:n] {
		if len(buf) == 0 {
			continue
		}
		w, err := s.outs[i].W.Write(buf)
		total += w
		if err != nil {
			return total, sinks.NewError(sinks.Server, false, fmt.Errorf("cannot write %d bytes to %s: %w", len(buf), s.outs[i].Name, err))
		}
	}
	return total, nil
}

// Close flushes and closes the file(s). Calling it again does nothing.
func (s *Sink) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return CloseOutputs(s.outs)
}
