package daemon

import (
	"reflect"
	"strings"
)

func reflectTypeOf(v any) reflect.Type {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// textUnmarshaler is the interface caarlos0/env uses for custom types;
// such structs are leaves, not nested settings.
var textUnmarshaler = reflect.TypeOf((*interface{ UnmarshalText([]byte) error })(nil)).Elem()

func walkSettings(t reflect.Type, prefix string, out *[]Setting) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("env")
		if tag == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Struct && tag == "" && !reflect.PointerTo(ft).Implements(textUnmarshaler) {
			walkSettings(ft, prefix+f.Tag.Get("envPrefix"), out)
			continue
		}
		if tag == "" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		secret := f.Tag.Get("secret")
		*out = append(*out, Setting{
			Key:     prefix + name,
			Flag:    flagName(prefix + name),
			Default: f.Tag.Get("envDefault"),
			Help:    f.Tag.Get("help"),
			Secret:  secret == "true",
			URL:     secret == "url",
			Field:   f.Name,
			File:    strings.Contains(","+opts+",", ",file,"),
			Bool:    ft.Kind() == reflect.Bool,
		})
	}
}
