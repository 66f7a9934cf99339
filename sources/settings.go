package sources

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SettingError is a configuration problem in one setting. Setting is the
// setting's name without the SOAKD_<W>_ prefix (e.g. "OUT_OF_ORDER"); the
// daemon adds the prefix so the user sees the exact env var.
type SettingError struct {
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return e.Setting + ": " + e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

// Invalid returns a *SettingError for setting.
func Invalid(setting, format string, args ...any) error {
	return &SettingError{Setting: setting, Err: fmt.Errorf(format, args...)}
}

// Shard is this process's slice of a data set: Index of Count disjoint
// slices (SHARD=i/N). The zero value means the whole data set.
type Shard struct {
	Index, Count int
}

// ParseShard parses "i/N" with 0 <= i < N. The empty string is the whole
// data set.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{0, 1}, nil
	}
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/N, e.g. 0/4", s)
	}
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want 0 <= i < N", s)
	}
	return Shard{i, n}, nil
}

// UnmarshalText implements encoding.TextUnmarshaler for config parsing.
func (s *Shard) UnmarshalText(b []byte) error {
	v, err := ParseShard(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Checked returns s with the zero value made 0/1, or a SHARD error when
// Index is not in 0..Count-1 (shard i+N would own shard i's items).
func (s Shard) Checked() (Shard, error) {
	if s.Count == 0 {
		return Shard{Index: 0, Count: 1}, nil
	}
	if s.Index < 0 || s.Index >= s.Count {
		return s, Invalid("SHARD", "%s: want 0 <= i < N", s)
	}
	return s, nil
}

// String returns "i/N".
func (s Shard) String() string {
	if s.Count == 0 {
		return "0/1"
	}
	return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.Count)
}

// Split returns the sub-slice part of parts of this shard: the slice
// Index+part*Count of Count*parts. The parts of a shard are disjoint and
// their union is the shard: item i belongs to part p exactly when
// i mod Count == Index and (i / Count) mod parts == p. Used to give each
// worker of a shard a disjoint slice.
func (s Shard) Split(part, parts int) Shard {
	c := s.Count
	if c == 0 {
		c = 1
	}
	return Shard{Index: s.Index + part*c, Count: c * parts}
}

// Owns reports whether item number i (a device or record) belongs to the
// shard: items are dealt round-robin, i mod Count == Index.
func (s Shard) Owns(i uint64) bool {
	if s.Count <= 1 {
		return true
	}
	return i%uint64(s.Count) == uint64(s.Index)
}

// MaxFields is the most fields a KV record may have (FIELDS); sinks
// prepare the field names field0.. up to it.
const MaxFields = 1024

// DataType is how a KV sink stores a record (DATA_TYPE). Sources read it
// with their record settings (ParseDataType) and hand it to sinks in
// their KVShape.
type DataType string

// Data types.
const (
	// DataTypeString packs the fields of a record in one value.
	DataTypeString DataType = "string"
	// DataTypeHash stores a record as a hash of its fields (the default).
	DataTypeHash DataType = "hash"
	// DataTypeSet stores a record as a set of its field values.
	DataTypeSet DataType = "set"
	// DataTypeZSet stores a record as a sorted set, the field index as
	// the score.
	DataTypeZSet DataType = "zset"
)

// ParseDataType parses string, hash, set or zset (case-insensitive); the
// empty string is the default, hash.
func ParseDataType(s string) (DataType, error) {
	switch v := DataType(strings.ToLower(strings.TrimSpace(s))); v {
	case "":
		return DataTypeHash, nil
	case DataTypeString, DataTypeHash, DataTypeSet, DataTypeZSet:
		return v, nil
	}
	return "", fmt.Errorf("data type %q: want string, hash, set or zset", s)
}

// UnmarshalText implements encoding.TextUnmarshaler (see ParseDataType).
func (t *DataType) UnmarshalText(b []byte) error {
	v, err := ParseDataType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// RenameSettings rewrites each error joined in err (as Validate returns
// them) with rename(setting, cause): setting is the *SettingError's name
// and cause its error, or "" and the error itself for other errors. Callers
// use it to name settings as the user wrote them (an env var, a flag).
func RenameSettings(err error, rename func(setting string, cause error) error) error {
	if err == nil {
		return nil
	}
	list := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	}
	out := make([]error, 0, len(list))
	for _, e := range list {
		var se *SettingError
		if errors.As(e, &se) {
			out = append(out, rename(se.Setting, se.Err))
		} else {
			out = append(out, rename("", e))
		}
	}
	return errors.Join(out...)
}
