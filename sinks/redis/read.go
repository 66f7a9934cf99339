package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

var _ sinks.KVReader = (*Sink)(nil)

// ReadRecords reads whole records, pipelined: GET (string), HGETALL
// (hash), SMEMBERS (set), ZRANGE WITHSCORES (zset). A cluster client
// sends each command to its key's node.
func (s *Sink) ReadRecords(ctx context.Context, keys []string, shape sinks.RecordShape, out []sources.StoredRecord) error {
	if len(keys) != len(out) {
		return fmt.Errorf("BUG: redis: %d keys, %d records", len(keys), len(out))
	}
	if len(keys) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return cancelled(err)
	}
	p := s.c.Pipeline()
	cmds := make([]goredis.Cmder, len(keys))
	for i, k := range keys {
		switch s.dt {
		case sources.DataTypeString:
			cmds[i] = p.Get(ctx, k)
		case sources.DataTypeHash:
			cmds[i] = p.HGetAll(ctx, k)
		case sources.DataTypeSet:
			cmds[i] = p.SMembers(ctx, k)
		case sources.DataTypeZSet:
			cmds[i] = p.ZRangeWithScores(ctx, k, 0, -1)
		}
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return s.failed(ctx, len(keys), err)
	}
	for i, c := range cmds {
		out[i] = sources.StoredRecord{}
		rec := &out[i]
		switch c := c.(type) {
		case *goredis.StringCmd:
			v, err := c.Bytes()
			if errors.Is(err, goredis.Nil) {
				continue
			}
			rec.Found = true
			splitString(rec, v, shape)
		case *goredis.MapStringStringCmd:
			m := c.Val()
			if len(m) == 0 {
				continue
			}
			rec.Found = true
			rec.Values = make([][]byte, shape.Fields)
			for name, v := range m {
				f, ok := fieldIndex(name, shape.Fields)
				if !ok {
					rec.Extra++
					continue
				}
				rec.Values[f] = []byte(v)
			}
		case *goredis.StringSliceCmd:
			m := c.Val()
			if len(m) == 0 {
				continue
			}
			rec.Found, rec.Unordered = true, true
			for _, v := range m {
				rec.Values = append(rec.Values, []byte(v))
			}
		case *goredis.ZSliceCmd:
			m := c.Val()
			if len(m) == 0 {
				continue
			}
			rec.Found = true
			rec.Values = make([][]byte, shape.Fields)
			for _, z := range m {
				f := int(z.Score)
				member, _ := z.Member.(string)
				if float64(f) != z.Score || f < 0 || f >= shape.Fields || rec.Values[f] != nil {
					rec.Extra++
					continue
				}
				rec.Values[f] = []byte(member)
			}
		}
	}
	return nil
}

// splitString cuts a string record into its fields; bytes beyond
// FIELDS x FIELD_LENGTH, or a part of a field, count as extra. A string
// of fewer whole fields lacks the last ones (nil): SETRANGE into a
// string deleted (evicted) makes one as long as the field it writes.
func splitString(rec *sources.StoredRecord, v []byte, shape sinks.RecordShape) {
	rec.Values = make([][]byte, shape.Fields)
	fl := shape.FieldLength
	for f := range rec.Values {
		if (f+1)*fl <= len(v) {
			rec.Values[f] = v[f*fl : (f+1)*fl]
		}
	}
	if len(v) > shape.Fields*fl || (fl > 0 && len(v)%fl != 0) {
		rec.Extra++
	}
}

// fieldIndex parses "field<N>" with N < fields.
func fieldIndex(name string, fields int) (int, bool) {
	rest, ok := strings.CutPrefix(name, "field")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || n >= fields || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}
