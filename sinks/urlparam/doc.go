package urlparam

import "strings"

// Doc describes one parameter for a list of them.
type Doc struct {
	Name string
	// Type is the type, with an Enum's choices or a range: "duration > 0s",
	// "copy|insert|unnest".
	Type string
	// Default is the default as written in a URL ("" = none).
	Default string
	Help    string
	// Group is the sink variant the parameter belongs to ("" = every one).
	Group string
}

// Docs lists the parameters in declaration order.
func (s *Set) Docs() []Doc {
	out := make([]Doc, len(s.Params))
	for i := range s.Params {
		p := &s.Params[i]
		out[i] = Doc{Name: p.Name, Type: p.typeDoc(), Default: p.Default, Help: p.Help, Group: p.Group}
	}
	return out
}

func (p *Param) typeDoc() string {
	t := p.baseTypeDoc()
	if p.Multi {
		t += ", repeatable"
	}
	if p.Secret {
		t += ", secret"
	}
	return t
}

func (p *Param) baseTypeDoc() string {
	if p.Syntax != "" {
		return p.Syntax
	}
	if p.Type == Enum {
		return strings.Join(p.names(), "|")
	}
	t := p.Type.String()
	if p.Type == String && p.Range.set {
		return t + " (" + p.Range.String(Int) + " bytes)"
	}
	if r := p.Range.String(p.Type); r != "" {
		t += " " + r
	}
	return t
}

// TLSFiles declares ca=, cert= and key=, the certificate files of the
// sinks that take them (sinks.ParseTLSFiles reads and checks them).
func TLSFiles() []Param {
	return []Param{
		{Name: "ca", Type: Path, KeepEmpty: true, Help: "PEM file of the CA that signs the server's certificate (trusted alone)"},
		{Name: "cert", Type: Path, KeepEmpty: true, Help: "PEM file of the client certificate (with key=)"},
		{Name: "key", Type: Path, KeepEmpty: true, Help: "PEM file of the client certificate's key (with cert=)"},
	}
}
