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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"sync"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/lineproto"
	"github.com/soakd/soakd/sources"
)

// Config is the parsed form of a file URL.
type Config struct {
	Path      string // "-" = standard output
	Format    Format
	Precision lineproto.Precision
	Append    bool
}

// ParseURL parses a file:// URL (or "-" via sinks.Parse).
func ParseURL(u *url.URL) (Config, error) {
	var c Config
	var errs []error
	switch {
	case u.Opaque != "":
		c.Path = u.Opaque
	default:
		c.Path = u.Host + u.Path
	}
	if c.Path == "" {
		errs = append(errs, errors.New("file URL has no path (want file:///path/to/file or - for standard output)"))
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "format", "precision", "append":
		default:
			errs = append(errs, fmt.Errorf("unknown parameter %q (known: format, precision, append)", k))
		}
	}
	var err error
	if c.Format, err = ParseFormat(q.Get("format")); err != nil {
		errs = append(errs, fmt.Errorf("format: %w", err))
	}
	if c.Precision, err = lineproto.ParsePrecision(q.Get("precision")); err != nil {
		errs = append(errs, fmt.Errorf("precision: %w", err))
	}
	if a := q.Get("append"); a != "" {
		if c.Append, err = strconv.ParseBool(a); err != nil {
			errs = append(errs, fmt.Errorf("append %q: want true or false", a))
		}
	}
	return c, errors.Join(errs...)
}

// Check is the registry's CheckFunc.
func Check(u *url.URL, kind sources.Kind) error {
	if kind == sources.KV {
		return errors.New("the file sink writes series data, not key-value operations")
	}
	_, err := ParseURL(u)
	return err
}

// Open is the registry's OpenFunc. It does no I/O: files are created by
// Prepare or the first Write.
func Open(_ context.Context, u *url.URL, o sinks.Options) (sinks.Sink, error) {
	if err := Check(u, o.Kind); err != nil {
		return nil, err
	}
	c, _ := ParseURL(u)
	return New(c, o.Schemas)
}

// New returns a sink writing tables of schemas as c says.
func New(c Config, schemas []*sources.Schema) (*Sink, error) {
	if c.Format.PerTable() && len(schemas) > 1 && c.Path == "-" {
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
	outs   []*output
	opened bool
	closed bool
}

var (
	_ sinks.Sink     = (*Sink)(nil)
	_ sinks.Preparer = (*Sink)(nil)
)

type output struct {
	schema *sources.Schema // nil: every table (line protocol)
	name   string
	f      *os.File
	w      *bufio.Writer
	own    bool // close f on Close
}

type encState struct {
	enc  RowEncoder
	bufs [][]byte // per output
}

// Stdout is where "-" writes; tests replace it.
var Stdout io.Writer = os.Stdout

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
	if s.cfg.Format.PerTable() && len(s.schemas) > 1 {
		for _, sc := range s.schemas {
			if err := s.addOutput(sc, TableFile(s.cfg.Path, sc.Measurement)); err != nil {
				return err
			}
		}
	} else {
		var sc *sources.Schema
		if s.cfg.Format.PerTable() && len(s.schemas) == 1 {
			sc = s.schemas[0]
		}
		if err := s.addOutput(sc, s.cfg.Path); err != nil {
			return err
		}
	}
	s.opened = true
	return nil
}

func (s *Sink) addOutput(sc *sources.Schema, name string) error {
	o := &output{schema: sc, name: name}
	empty := true
	if name == "-" {
		o.w = bufio.NewWriterSize(Stdout, 1<<20)
	} else {
		flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if s.cfg.Append {
			flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		f, err := os.OpenFile(name, flag, 0o644)
		if err != nil {
			return sinks.NewError(sinks.Rejected, false, fmt.Errorf("cannot open %s: %w", name, err))
		}
		if st, err := f.Stat(); err == nil && st.Size() > 0 {
			empty = false
		}
		o.f, o.own = f, true
		o.w = bufio.NewWriterSize(f, 1<<20)
	}
	if sc != nil && empty {
		if _, err := o.w.Write(s.cfg.Format.Header(sc)); err != nil {
			return sinks.NewError(sinks.Server, false, fmt.Errorf("cannot write header of %s: %w", name, err))
		}
	}
	s.outs = append(s.outs, o)
	return nil
}

// outputFor returns the index of the output of table schema sc.
func (s *Sink) outputFor(sc *sources.Schema) (int, error) {
	for i, o := range s.outs {
		if o.schema == nil || o.schema == sc {
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
		w, err := s.outs[i].w.Write(buf)
		total += w
		if err != nil {
			return total, sinks.NewError(sinks.Server, false, fmt.Errorf("cannot write %d bytes to %s: %w", len(buf), s.outs[i].name, err))
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
	var errs []error
	for _, o := range s.outs {
		if err := o.w.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("cannot flush %s: %w", o.name, err))
		}
		if o.own {
			if err := o.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("cannot close %s: %w", o.name, err))
			}
		}
	}
	return errors.Join(errs...)
}
