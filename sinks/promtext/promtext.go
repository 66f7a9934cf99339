// Package promtext reads the few figures a sink's target watch needs from
// a server's own /metrics, in the Prometheus text exposition format that
// InfluxDB, Prometheus, VictoriaMetrics and most Go servers serve. It
// reads line by line in bounded memory and parses only the metrics the
// caller asks for, so a server with hundreds of thousands of series
// costs a scan, not a parse.
//
//	err := promtext.Scan(body, func(name string) bool { return name == "process_cpu_seconds_total" },
//		func(s promtext.Sample) { cpu = s.Value })
package promtext

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Sample is one line of the exposition: a metric's name, its labels (nil
// when it has none) and its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Scan reads the exposition from r and calls fn for every sample whose
// metric name wanted accepts, in the order of the text. Comments and
// other metrics are skipped unparsed; a malformed line of a wanted
// metric is an error naming the metric.
func Scan(r io.Reader, wanted func(name string) bool, fn func(Sample)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if !wanted(name) {
			continue
		}
		labels, rest, err := parseLabels(rest)
		if err != nil {
			return fmt.Errorf("metric %s: %w", name, err)
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return fmt.Errorf("metric %s has no value", name)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return fmt.Errorf("metric %s: %w", name, err)
		}
		fn(Sample{Name: name, Labels: labels, Value: v})
	}
	return sc.Err()
}

// parseLabels reads a label set `{a="x",b="y\"z"}` at the start of s (if
// any) and returns the labels and what follows.
func parseLabels(s string) (map[string]string, string, error) {
	if !strings.HasPrefix(s, "{") {
		return nil, s, nil
	}
	labels := map[string]string{}
	s = s[1:]
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return nil, "", errors.New("malformed labels")
		}
		name := strings.TrimSpace(s[:eq])
		s = s[eq+2:]
		var val strings.Builder
		i := 0
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
				continue
			}
			val.WriteByte(s[i])
		}
		if i == len(s) {
			return nil, "", errors.New("unterminated label value")
		}
		labels[name] = val.String()
		s = s[i+1:]
	}
}
