package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// withExtra is the JSON object b (a struct's own fields, as json.Marshal
// wrote them) followed by extra's fields sorted by name: the fields
// observers add to /status (daemon.StatusAdder) and to the summary
// (daemon.SummaryAdder). An added field may not take the name of one of own's
// (the struct's JSON names): with two values under one name decoders
// keep one, or fail.
func withExtra(b []byte, extra map[string]any, own map[string]bool, what string) ([]byte, error) {
	if len(extra) == 0 {
		return b, nil
	}
	b = b[:len(b)-1] // the closing brace
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if own[k] {
			return nil, fmt.Errorf("%s field %s: the object has a field of that name already", what, k)
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(extra[k])
		if err != nil {
			return nil, fmt.Errorf("%s field %s: %w", what, k, err)
		}
		b = append(append(append(append(b, ','), kb...), ':'), vb...)
	}
	return append(b, '}'), nil
}

// jsonNames returns a func giving the JSON names of T's own fields.
func jsonNames[T any]() func() map[string]bool {
	return sync.OnceValue(func() map[string]bool {
		keys := map[string]bool{}
		t := reflect.TypeFor[T]()
		for i := range t.NumField() {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				keys[name] = true
			}
		}
		return keys
	})
}
