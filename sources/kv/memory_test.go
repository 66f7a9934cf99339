package kv

import (
	"errors"
	"testing"

	"github.com/soakd/soakd/sources"
)

// The built-in target holds every record in soakd's memory: a data set
// over its bound is refused, naming RECORDS, only when it is the target.
func TestCheckBuiltinSize(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Records = 10_000_000 // 10 fields of 100 bytes: about 14 GiB
	var se *sources.SettingError
	if err := c.Check(sources.Common{Builtin: true}); !errors.As(err, &se) || se.Setting != "RECORDS" {
		t.Errorf("built-in target: %v, want RECORDS refused", err)
	}
	if err := c.Check(sources.Common{}); err != nil {
		t.Errorf("real target: %v", err)
	}
	c.Records = 10_000
	if err := c.Check(sources.Common{Builtin: true}); err != nil {
		t.Errorf("10,000 records on the built-in target: %v", err)
	}
	c.Fields = 0
	if err := c.Check(sources.Common{}); !errors.As(err, &se) || se.Setting != "FIELDS" {
		t.Errorf("Check without Validate's problem: %v", err)
	}
}

// One operation of a batch takes its key and every field value.
func TestUnitBytes(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Fields, c.FieldLength = 4, 1000
	src, err := New(c, 1, whole())
	if err != nil {
		t.Fatal(err)
	}
	if got := src.(sources.UnitSizer).UnitBytes(); got != 64+4*1000 {
		t.Errorf("UnitBytes %d, want %d", got, 64+4*1000)
	}
}

// A shard that would own no record is refused by Check, naming RECORDS,
// so config --check and the start of a run say so (exit 2) instead of
// the run failing when it builds the source.
func TestCheckShardOwnsRecords(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Records = 2
	var se *sources.SettingError
	if err := c.Check(sources.Common{Shard: sources.Shard{Index: 3, Count: 4}}); !errors.As(err, &se) || se.Setting != "RECORDS" {
		t.Errorf("2 records, shard 3/4: %v, want RECORDS refused", err)
	}
	if err := c.Check(sources.Common{Shard: sources.Shard{Index: 1, Count: 2}}); err != nil {
		t.Errorf("2 records, shard 1/2: %v", err)
	}
}
