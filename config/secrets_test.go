package config

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/sinks"
)

func TestScrubberHidesTheSecretButNotTheURLItIsPartOf(t *testing.T) {
	tg, err := sinks.ParseTarget("postgres://postgres:postgres@127.0.0.1:1/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	w := &Workload{Name: "iot", Sink: tg}
	scrub := w.Scrubber()
	for in, want := range map[string]string{
		// soakd's own messages name the redacted URL: shown as is.
		"waiting for " + tg.Redacted + " (connect): refused": "waiting for postgres://postgres:xxxxx@127.0.0.1:1/postgres?sslmode=disable (connect): refused",
		// A driver quoting the password, or the raw URL.
		"host=127.0.0.1 user=u password=postgres": "host=127.0.0.1 user=u password=xxxxx",
		"dial postgres://postgres:postgres@h/db":  "dial postgres://xxxxx:xxxxx@h/db",
		// Both in one message, the secret after the kept URL.
		tg.Redacted + ": password=postgres": tg.Redacted + ": password=xxxxx",
		"no secret here":                    "no secret here",
	} {
		if got := scrub(in); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScrubberWithAPasswordInsideTheSchemeOrHost(t *testing.T) {
	tg, err := sinks.ParseTarget("redis://:local@localhost:6379/0")
	if err != nil {
		t.Fatal(err)
	}
	scrub := (&Workload{Name: "kv", Sink: tg}).Scrubber()
	in := "cannot reach " + tg.Redacted + ": AUTH local failed"
	got := scrub(in)
	if strings.Contains(strings.TrimPrefix(got, "cannot reach "+tg.Redacted), "local") || !strings.HasPrefix(got, "cannot reach redis://:xxxxx@localhost:6379/0") {
		t.Errorf("scrub(%q) = %q", in, got)
	}
}
