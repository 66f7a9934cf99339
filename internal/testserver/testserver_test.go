package testserver

import (
	"os"
	"path/filepath"
	"testing"
)

// A binary installed into `go env GOBIN` is found also when GOBIN is set
// only in go's config file (`go env -w GOBIN=...`), not in the environment.
func TestFindBinaryInGoEnvGOBIN(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(bin, "soakd-testserver-tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	goenv := filepath.Join(dir, "env")
	if err := os.WriteFile(goenv, []byte("GOBIN="+bin+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOENV", goenv)
	t.Setenv("GOBIN", "")
	os.Unsetenv("GOBIN") // t.Setenv restores it at the end
	if got := FindBinary("soakd-testserver-tool", GoBinDirs()...); got != tool {
		t.Fatalf("FindBinary found %q, want %q (GoBinDirs %q)", got, tool, GoBinDirs())
	}
}
