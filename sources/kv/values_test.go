package kv

import (
	"bytes"
	"testing"

	"github.com/soakd/soakd/sources"
)

// record builds what a target holding op's record after op would return:
// every field the insert's value, then op's values over them.
func storedAfter(s *Source, b *sources.Batch, op *sources.KVOp) *sources.StoredRecord {
	fl := s.cfg.FieldLength
	rec := &sources.StoredRecord{Found: true, Values: make([][]byte, s.cfg.Fields)}
	for f := range rec.Values {
		rec.Values[f] = s.appendValue(nil, op.Record, f, 0)
	}
	val := b.Value(op)
	if op.Field >= 0 {
		rec.Values[op.Field] = append([]byte(nil), val...)
	} else {
		for f := range rec.Values {
			rec.Values[f] = append([]byte(nil), val[f*fl:(f+1)*fl]...)
		}
	}
	return rec
}

// Every value a stream writes checks as exactly what its write sent; a
// changed byte, another record's or field's value, and an older value of
// the same stream do not.
func TestValuesCheck(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Workload, _ = ParseWorkload("update=0.4,insert=0.2,rmw=0.2,read=0.2")
	c.Fields, c.FieldLength = 5, 40
	s := mustSource(t, c, sources.Shard{Index: 1, Count: 3})
	if !s.Tagged() || !s.Updates() {
		t.Fatal("40-byte values of a workload with updates: want tagged, updates")
	}
	st := mustStream(t, s, 2, 4)
	b := s.NewBatch()
	writes := 0
	fillN(t, st, b, 3000, 16, func(b *sources.Batch) {
		for i := range b.Ops {
			op := &b.Ops[i]
			rec, ver, ok := s.Written(b, op)
			if !ok {
				if op.Op == sources.OpInsert || op.Op == sources.OpUpdate || op.Op == sources.OpRMW {
					t.Fatalf("%s: Written says it writes nothing", op.Op)
				}
				continue
			}
			writes++
			if rec != op.Record {
				t.Fatalf("Written record %d, op's %d", rec, op.Record)
			}
			if op.Op == sources.OpInsert && ver != 0 || op.Op != sources.OpInsert && (ver == 0 || ver>>seqBits != 3) {
				t.Fatalf("%s: version %x", op.Op, ver)
			}
			got := storedAfter(s, b, op)
			if v := s.Check(rec, int(op.Field), ver, got); v != sources.Intact {
				t.Fatalf("%s of record %d field %d: %s, want intact", op.Op, rec, op.Field, v)
			}
			f := max(int(op.Field), 0)
			bad := *got
			bad.Values = append([][]byte(nil), got.Values...)
			flip := append([]byte(nil), got.Values[f]...)
			flip[len(flip)-1] ^= 1
			bad.Values[f] = flip
			if v := s.Check(rec, int(op.Field), ver, &bad); v != sources.Mismatch {
				t.Fatalf("a changed byte: %s, want mismatch", v)
			}
			bad.Values[f] = s.appendValue(nil, rec+3, f, ver)
			if v := s.Check(rec, int(op.Field), ver, &bad); v != sources.Mismatch {
				t.Fatalf("another record's value: %s, want mismatch", v)
			}
			if ver != 0 {
				bad.Values[f] = s.appendValue(nil, rec, f, 0)
				if v := s.Check(rec, int(op.Field), ver, &bad); v != sources.Mismatch {
					t.Fatalf("the insert's value after an update: %s, want mismatch", v)
				}
				if ver&seqMask > 0 {
					bad.Values[f] = s.appendValue(nil, rec, f, ver-1)
					if v := s.Check(rec, int(op.Field), ver, &bad); v != sources.Mismatch {
						t.Fatalf("an older update of the same stream: %s, want mismatch", v)
					}
				}
				bad.Values[f] = s.appendValue(nil, rec, f, updateVersion(0, 1<<40))
				if v := s.Check(rec, int(op.Field), ver, &bad); v != sources.Intact {
					t.Fatalf("another stream's update: %s, want intact (updates of two streams cannot be ordered)", v)
				}
			}
			if v := s.Check(rec, int(op.Field), ver, &sources.StoredRecord{}); v != sources.Missing {
				t.Fatalf("no record: %s, want missing", v)
			}
			short := *got
			short.Values = got.Values[:len(got.Values)-1]
			if v := s.Check(rec, int(op.Field), ver, &short); v != sources.Mismatch {
				t.Fatalf("a field missing: %s, want mismatch", v)
			}
			set := &sources.StoredRecord{Found: true, Unordered: true, Values: append([][]byte(nil), got.Values...)}
			set.Values[0], set.Values[len(set.Values)-1] = set.Values[len(set.Values)-1], set.Values[0]
			if v := s.Check(rec, int(op.Field), ver, set); v != sources.Intact {
				t.Fatalf("the record as a set: %s, want intact", v)
			}
			set.Values[1] = s.appendValue(nil, rec+1, 1, 0)
			if v := s.Check(rec, int(op.Field), ver, set); v != sources.Mismatch {
				t.Fatalf("a set with another record's value: %s, want mismatch", v)
			}
			set.Values = set.Values[1:]
			if v := s.Check(rec, int(op.Field), ver, set); v != sources.Mismatch {
				t.Fatalf("a set short of a member: %s, want mismatch", v)
			}
		}
	})
	if writes < 1000 {
		t.Fatalf("only %d writes", writes)
	}
}

// Short values carry no tag: the insert's are still exact, updated ones
// are checked for their shape.
func TestUntaggedValues(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Fields, c.FieldLength = 3, 7
	s := mustSource(t, c, whole())
	if s.Tagged() {
		t.Fatal("7-byte values: want untagged")
	}
	v := s.appendValue(nil, 5, 1, 0)
	if r, _ := s.CheckValue(5, 1, AnyVersion, v); r != ValueOK {
		t.Fatalf("insert value: %v", r)
	}
	if r, _ := s.CheckValue(5, 1, AnyVersion, []byte("abc\x01efg")); r != ValueForeign {
		t.Fatal("a value with a control byte passed")
	}
	c.Workload, _ = ParseWorkload("c")
	ro := mustSource(t, c, whole())
	if r, _ := ro.CheckValue(5, 1, AnyVersion, s.appendValue(nil, 5, 2, 0)); r != ValueForeign {
		t.Fatal("read-only workload: another field's value passed")
	}
	if r, _ := ro.CheckValue(5, 1, AnyVersion, v); r != ValueOK {
		t.Fatal("read-only workload: the insert's value failed")
	}
}

// A record's loaded values do not depend on which stream loads it, and
// equal what an insert of that record writes.
func TestLoadValuesAreTheRecords(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Records, c.Fields, c.FieldLength = 50, 4, 20
	s := mustSource(t, c, whole())
	load := &LoadSource{s}
	for _, parts := range []int{1, 3} {
		for p := range parts {
			st := mustStream(t, load, p, parts)
			b := s.NewBatch()
			for {
				b.Reset()
				err := st.Fill(b, 8, 0)
				for i := range b.Ops {
					op := &b.Ops[i]
					for f := range 4 {
						want := s.appendValue(nil, op.Record, f, 0)
						if got := b.Value(op)[f*20 : (f+1)*20]; !bytes.Equal(got, want) {
							t.Fatalf("parts %d: record %d field %d loads %q, want %q", parts, op.Record, f, got, want)
						}
					}
				}
				if err != nil {
					break
				}
			}
		}
	}
}

func TestTagRoundTrip(t *testing.T) {
	t.Parallel()
	s := mustSource(t, DefaultConfig(), whole())
	for _, tc := range []struct {
		field int
		ver   uint64
	}{{0, 0}, {9, 1}, {1023, updateVersion(99999, seqMask)}, {5, updateVersion(0, 12345)}} {
		v := s.appendValue(nil, 77, tc.field, tc.ver)
		f, ver, ok := decodeTag(v)
		if !ok || f != tc.field || ver != tc.ver {
			t.Errorf("tag of (%d, %x) decodes as (%d, %x, %v)", tc.field, tc.ver, f, ver, ok)
		}
	}
	if _, _, ok := decodeTag([]byte("!!!!!!!!!!!!!!!!")); ok {
		t.Error("a value of other characters decodes as tagged")
	}
	if _, _, ok := decodeTag([]byte("AA//////////////")); ok {
		t.Error("a version beyond 62 bits decodes")
	}
}
