package sinks

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/soakd/soakd/sinks/urlparam"
	"github.com/soakd/soakd/sources"
)

// A sink that stores records as single values (as Memcached does) refuses
// DATA_TYPE=hash when the configuration is checked.
func TestCheckShaped(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	open := func(context.Context, *url.URL, Options) (Sink, error) { return nil, nil }
	params := &urlparam.Set{}
	r.Add(Entry{Schemes: []string{"mc", "mcs"}, Kinds: []sources.Kind{sources.KV}, Open: open, Params: params,
		Check: func(u *url.URL, _ sources.Kind) error {
			if u.Host == "" {
				return errors.New("no host")
			}
			return nil
		},
		CheckShape: func(_ *url.URL, _ sources.Kind, s sources.KVShape) error {
			if s.DataType == sources.DataTypeHash {
				return errors.New("DATA_TYPE hash: this target stores a record as one value; use string")
			}
			return nil
		}})
	r.Add(Entry{Schemes: []string{"a"}, Kinds: []sources.Kind{sources.Series, sources.KV}, Open: open})
	check := func(raw string, kind sources.Kind, dt sources.DataType) error {
		tg, err := ParseTarget(raw)
		if err != nil {
			t.Fatal(err)
		}
		return r.CheckShaped(tg, kind, sources.KVShape{DataType: dt, KeyPrefix: "p:"})
	}
	if err := check("mc://h", sources.KV, sources.DataTypeHash); err == nil || !strings.Contains(err.Error(), "DATA_TYPE hash") {
		t.Errorf("hash: %v", err)
	}
	if err := check("mc://h", sources.KV, sources.DataTypeString); err != nil {
		t.Errorf("string: %v", err)
	}
	// The URL's own check and the registry's kinds come first.
	if err := check("mc://", sources.KV, sources.DataTypeHash); err == nil || err.Error() != "no host" {
		t.Errorf("no host: %v", err)
	}
	if err := check("mc://h", sources.Series, ""); err == nil || !strings.Contains(err.Error(), "series workloads") {
		t.Errorf("series: %v", err)
	}
	// An entry without CheckShape takes any shape.
	if err := check("a://", sources.KV, sources.DataTypeHash); err != nil {
		t.Errorf("entry without CheckShape: %v", err)
	}
	es := r.Entries()
	if len(es) != 2 || es[0].Schemes[0] != "a" || es[1].Params != params {
		t.Errorf("Entries() = %d entries, want a then mc once", len(es))
	}
}
