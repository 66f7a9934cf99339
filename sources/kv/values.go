package kv

import (
	"bytes"
	"strconv"

	"github.com/soakd/soakd/sources"
)

// Values. A field value is a function of (seed, record, field, version):
// version 0 is what the record's insert (or the load) writes; an update
// writes version (part+1)<<seqBits | seq, where part is the stream that
// generated it and seq the number of operations that stream generated
// before it. A value of at least minTagged bytes starts with a tag: the
// field (2 characters) and the version (11 characters) in base 64; the
// rest is FIELD_LENGTH-tagLen bytes of the pool at an offset hashed from
// (seed, record, field, version). So any stored value can be checked on
// its own: its tag says which write it claims to be, and the rest must be
// exactly what that write sent. Shorter values carry no tag: the pool at
// the hashed offset, the whole value.
const (
	tagLen    = 13
	minTagged = tagLen + 3
	seqBits   = 45
	seqMask   = 1<<seqBits - 1
	// AnyVersion stands for no particular write: an update's version when
	// values carry no tag, or a check of a value against any write.
	AnyVersion = ^uint64(0)
)

const tagDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// tagValue maps a tag character back to its 6 bits; 0xff for others.
var tagValue = func() [256]byte {
	var t [256]byte
	for i := range t {
		t[i] = 0xff
	}
	for i := range len(tagDigits) {
		t[tagDigits[i]] = byte(i)
	}
	return t
}()

// updateVersion is the version of the values of operation seq of stream
// part.
func updateVersion(part int, seq uint64) uint64 {
	return uint64(part+1)<<seqBits | seq&seqMask
}

// valueMix hashes (seed, record, field, version) to a pool offset.
func valueMix(seed, record uint64, field int, version uint64) uint64 {
	return sources.Mix64(seed ^ record*0x9e3779b97f4a7c15 ^ uint64(field+1)*0xc2b2ae3d27d4eb4f ^ version*0x165667b19e3779f9)
}

// appendValue appends field's value of record at version to dst.
func (s *Source) appendValue(dst []byte, record uint64, field int, version uint64) []byte {
	l := s.cfg.FieldLength
	body := l
	h := valueMix(s.seed, record, field, version)
	if l >= minTagged {
		body = l - tagLen
		var tag [tagLen]byte
		tag[0], tag[1] = tagDigits[field>>6&63], tagDigits[field&63]
		for i := tagLen - 1; i >= 2; i-- {
			tag[i] = tagDigits[version&63]
			version >>= 6
		}
		dst = append(dst, tag[:]...)
	}
	span := uint64(len(s.pool) - body)
	o := h % span
	return append(dst, s.pool[o:o+uint64(body)]...)
}

// appendValues appends the values of n fields of record from field first
// on (n = 1: only first), at version, as op's values.
func (s *Source) appendValues(b *sources.Batch, op *sources.KVOp, record uint64, first, n int, version uint64) {
	op.ValOff = uint32(len(b.Values))
	for f := first; f < first+n; f++ {
		b.Values = s.appendValue(b.Values, record, f, version)
	}
	op.ValLen = uint32(len(b.Values)) - op.ValOff
}

// decodeTag returns the field and version a tagged value claims.
func decodeTag(v []byte) (field int, version uint64, ok bool) {
	if len(v) < tagLen {
		return 0, 0, false
	}
	var d [tagLen]byte
	for i := range d {
		if d[i] = tagValue[v[i]]; d[i] == 0xff {
			return 0, 0, false
		}
	}
	field = int(d[0])<<6 | int(d[1])
	for i := 2; i < tagLen; i++ {
		version = version<<6 | uint64(d[i])
	}
	// 11 digits hold 66 bits: a version uses 62 (17 for the part, 45 for
	// the sequence number).
	if version>>62 != 0 {
		return 0, 0, false
	}
	return field, version, true
}

// Tagged reports whether the source's values carry tags (FIELD_LENGTH of
// at least 16 bytes): then every stored value can be checked exactly.
func (s *Source) Tagged() bool { return s.cfg.FieldLength >= minTagged }

// Updates reports whether the run phase changes records after their
// insert (the workload has updates or read-modify-writes).
func (s *Source) Updates() bool {
	return s.cfg.Workload.Has(sources.OpUpdate) || s.cfg.Workload.Has(sources.OpRMW)
}

// ValueCheck is what checking one stored value found.
type ValueCheck uint8

// Results of CheckValue.
const (
	// ValueOK: the value is one this source writes for the record and
	// field.
	ValueOK ValueCheck = iota
	// ValueForeign: the value is not one the source writes for that record
	// and field (corrupt, or another record's or field's).
	ValueForeign
	// ValueOlder: the value was written by the same stream before the
	// write it is compared with (a lost update), or is the insert's while
	// an update was acknowledged.
	ValueOlder
)

// CheckValue checks v, field's stored value of record, against an
// acknowledged write of version (AnyVersion: no particular write). A
// tagged value must be exactly what the write its tag names sent, for
// this record and field, and not older than version; an untagged one must
// be the insert's when the workload never updates, else FIELD_LENGTH
// printable bytes. It also returns the version the value carries
// (AnyVersion when it carries no tag).
func (s *Source) CheckValue(record uint64, field int, version uint64, v []byte) (ValueCheck, uint64) {
	if len(v) != s.cfg.FieldLength {
		return ValueForeign, AnyVersion
	}
	if !s.Tagged() {
		if !s.Updates() {
			if !s.Exact(record, field, 0, v) {
				return ValueForeign, AnyVersion
			}
			return ValueOK, 0
		}
		for _, c := range v {
			if c < '!' || c > '~' {
				return ValueForeign, AnyVersion
			}
		}
		return ValueOK, AnyVersion
	}
	f, got, ok := decodeTag(v)
	if !ok || f != field || !s.Exact(record, field, got, v) {
		return ValueForeign, AnyVersion
	}
	if version != AnyVersion && got != version && older(got, version) {
		return ValueOlder, got
	}
	return ValueOK, got
}

// Exact reports whether v is exactly field's value of record at version.
func (s *Source) Exact(record uint64, field int, version uint64, v []byte) bool {
	var buf [256]byte
	return bytes.Equal(v, s.appendValue(buf[:0], record, field, version))
}

// older reports whether a value of version got must have been written
// before one of version want: the insert's is older than any update's,
// and a stream's updates are in sequence order. Updates of different
// streams cannot be ordered.
func older(got, want uint64) bool {
	switch {
	case want == 0:
		return false
	case got == 0:
		return true
	}
	return got>>seqBits == want>>seqBits && got&seqMask < want&seqMask
}

var _ sources.RecordChecker = (*Source)(nil)

// Written returns the record op writes and the version of its values.
func (s *Source) Written(b *sources.Batch, op *sources.KVOp) (record, version uint64, ok bool) {
	switch op.Op {
	case sources.OpInsert:
		return op.Record, 0, true
	case sources.OpUpdate, sources.OpRMW:
		v := b.Value(op)
		if !s.Tagged() {
			return op.Record, AnyVersion, true
		}
		if _, ver, ok := decodeTag(v); ok {
			return op.Record, ver, true
		}
		return op.Record, AnyVersion, true
	}
	return 0, 0, false
}

// AppendKey appends record's key: KEY_PREFIX + "user" + fnv64(record).
func (s *Source) AppendKey(dst []byte, record uint64) []byte {
	dst = append(dst, s.prefix...)
	dst = append(dst, "user"...)
	return strconv.AppendUint(dst, fnv64(record), 10)
}

// Check compares got with what an acknowledged write of version to field
// (-1: every field) of record must have left (see
// sources.RecordChecker). Fields the write did not touch must hold values
// the source writes for them, of any version.
func (s *Source) Check(record uint64, field int, version uint64, got *sources.StoredRecord) sources.Verdict {
	if !got.Found {
		return sources.Missing
	}
	if got.Extra > 0 {
		return sources.Mismatch
	}
	fields := s.cfg.Fields
	want := func(f int) uint64 {
		if field < 0 || f == field {
			return version
		}
		return AnyVersion
	}
	// A record that lacks fields soakd wrote, and holds only values it
	// writes in the others, lost them: it was deleted (evicted, flushed,
	// a restart without persistence) and an update wrote some fields
	// again. That is Missing, as the record deleted is, not Mismatch:
	// nothing stored was changed. Redis pads the fields before the one
	// SETRANGE writes into a missing string with zero bytes, which soakd
	// never writes: they are absent fields too.
	if !got.Unordered {
		if len(got.Values) != fields {
			return sources.Mismatch
		}
		absent := false
		for f, v := range got.Values {
			if v == nil || zeroBytes(v) {
				absent = true
				continue
			}
			if r, _ := s.CheckValue(record, f, want(f), v); r != ValueOK {
				return sources.Mismatch
			}
		}
		if absent {
			return sources.Missing
		}
		return sources.Intact
	}
	// A set holds values, not fields, and an update of one field pops a
	// random member (SPOP) before adding its value, so which values a set
	// holds cannot be known: each member must be a value this source
	// writes for the record.
	if len(got.Values) > fields {
		return sources.Mismatch
	}
	for _, v := range got.Values {
		if !s.memberOK(record, v) {
			return sources.Mismatch
		}
	}
	if len(got.Values) < fields {
		return sources.Missing
	}
	return sources.Intact
}

// zeroBytes reports whether v is all zero bytes (and not empty).
func zeroBytes(v []byte) bool {
	for _, c := range v {
		if c != 0 {
			return false
		}
	}
	return len(v) > 0
}

// memberOK reports whether v is a value some field of record may hold:
// what its tag claims, or (untagged) the insert's value of a field when
// no update can have changed it, else any value of the record's shape.
func (s *Source) memberOK(record uint64, v []byte) bool {
	if s.Tagged() {
		f, _, ok := decodeTag(v)
		if !ok || f >= s.cfg.Fields {
			return false
		}
		r, _ := s.CheckValue(record, f, AnyVersion, v)
		return r == ValueOK
	}
	for f := range s.cfg.Fields {
		if r, _ := s.CheckValue(record, f, AnyVersion, v); r == ValueOK {
			return true
		}
	}
	return false
}

// KeySpace returns the shard's records before the run's inserts (the
// load's) and the record indexes taken so far, inserts included: the
// shard's records are those of index below next (see Record).
func (s *Source) KeySpace() (loaded, next uint64) { return s.owned, s.nextIndex.Load() }

// Record maps a record index of the shard to its record number.
func (s *Source) Record(j uint64) uint64 { return s.record(j) }

// Inserts reports whether the run phase inserts records (after which
// the records updates choose from depend on timing, so which record an
// update wrote cannot be replayed).
func (s *Source) Inserts() bool { return s.inserts }

// Claim returns the field and version a stored value's tag claims; ok is
// false for a value without a valid tag (or when values carry none).
func (s *Source) Claim(v []byte) (field int, version uint64, ok bool) {
	if !s.Tagged() || len(v) != s.cfg.FieldLength {
		return 0, 0, false
	}
	return decodeTag(v)
}

// Fields is FIELDS, FieldLength FIELD_LENGTH.
func (s *Source) Fields() int { return s.cfg.Fields }

// FieldLength is FIELD_LENGTH.
func (s *Source) FieldLength() int { return s.cfg.FieldLength }
