package urlparam_test

import (
	"testing"

	"github.com/soakd/soakd/sinks/file"
	"github.com/soakd/soakd/sinks/influx"
	"github.com/soakd/soakd/sinks/null"
	"github.com/soakd/soakd/sinks/postgres"
	"github.com/soakd/soakd/sinks/redis"
	"github.com/soakd/soakd/sinks/remotewrite"
	"github.com/soakd/soakd/sinks/urlparam"
)

// Every sink's declaration is sound: a type, help and a valid default
// for each parameter.
func TestSinkDeclarations(t *testing.T) {
	for name, s := range map[string]*urlparam.Set{
		"null": &null.Params, "file": &file.Params, "postgres": &postgres.Params, "influx": &influx.Params, "redis": &redis.Params,
		"remotewrite": &remotewrite.Params,
	} {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
