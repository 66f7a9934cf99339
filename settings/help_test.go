package settings

import (
	"bytes"
	"testing"
)

// WriteTable lists settings in columns, a missing default as -, values
// as Shown, and no value column without values.
func TestWriteTable(t *testing.T) {
	t.Parallel()
	list := []Setting{{Key: "SOAKD_A", Flag: "a", Default: "1", Help: "first"}, {Key: "SOAKD_TOKEN", Flag: "token", Secret: true, Help: "secret"}}
	var b bytes.Buffer
	WriteTable(&b, list, map[string]string{"SOAKD_TOKEN": "hunter2"})
	want := "VARIABLE     FLAG     DEFAULT  VALUE  HELP\n" +
		"SOAKD_A      --a      1               first\n" +
		"SOAKD_TOKEN  --token  -        (set)  secret\n"
	if b.String() != want {
		t.Errorf("with values:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	WriteTable(&b, list, nil)
	want = "VARIABLE     FLAG     DEFAULT  HELP\n" +
		"SOAKD_A      --a      1        first\n" +
		"SOAKD_TOKEN  --token  -        secret\n"
	if b.String() != want {
		t.Errorf("without values:\n%s\nwant\n%s", b.String(), want)
	}
}

// A setting that lists URLs among other words (soakd sweep's GRID) shows
// each URL redacted and the rest as written.
func TestShownURLs(t *testing.T) {
	s := Setting{URLs: true}
	got := s.Shown("TARGET=postgres://u:pw@a/db?sslmode=disable,influx1://b?u=x&p=pw2 WORKERS=1,2")
	if got != "TARGET=postgres://u:xxxxx@a/db?sslmode=disable,influx1://b?p=xxxxx&u=x WORKERS=1,2" {
		t.Errorf("shown as %q", got)
	}
}
