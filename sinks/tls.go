package sinks

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/soakd/soakd/sinks/urlparam"
)

// TLSParams are the URL parameters of a sink's TLS files (the redis and
// influx sinks; the postgres sink takes libpq's sslrootcert, sslcert and
// sslkey): ca is a PEM file of the certificate authorities that sign the
// server's certificate (instead of the system's), cert and key a client
// certificate and its unencrypted private key, for servers that ask for
// one.
var TLSParams = []string{"ca", "cert", "key"}

// TLSFiles are the paths given by TLSParams ("" = not set).
type TLSFiles struct {
	CA, Cert, Key string
}

// ParseTLSFiles reads TLSParams from q. cert and key come together.
func ParseTLSFiles(q url.Values) (TLSFiles, error) {
	f := TLSFiles{CA: q.Get("ca"), Cert: q.Get("cert"), Key: q.Get("key")}
	var errs []error
	for _, p := range TLSParams {
		if q.Has(p) && q.Get(p) == "" {
			errs = append(errs, fmt.Errorf("%s: want the path of a PEM file", p))
		}
	}
	if (f.Cert == "") != (f.Key == "") {
		errs = append(errs, errors.New("cert, key: give both the client certificate and its key, or neither"))
	}
	return f, errors.Join(errs...)
}

// Set reports whether any file is given.
func (f TLSFiles) Set() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

// Apply reads the files into c: the CA as c.RootCAs (only it is trusted
// then), the client certificate as c.Certificates. Every problem names
// its parameter; no file content is ever quoted.
func (f TLSFiles) Apply(c *tls.Config) error {
	var errs []error
	if f.CA != "" {
		pool, err := readCA(f.CA)
		if err != nil {
			errs = append(errs, fmt.Errorf("ca %s: %w", f.CA, err))
		} else {
			c.RootCAs = pool
		}
	}
	if f.Cert != "" && f.Key != "" {
		cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			errs = append(errs, fmt.Errorf("cert %s, key %s: cannot load the client certificate: %w", f.Cert, f.Key, keyPairError(err)))
		} else {
			c.Certificates = []tls.Certificate{cert}
		}
	}
	return errors.Join(errs...)
}

func readCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", unwrapPath(err))
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM certificate in it")
	}
	return pool, nil
}

// unwrapPath drops the path os errors repeat (the message names it once).
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// keyPairError keeps tls.LoadX509KeyPair's reason; for an encrypted key
// it says that the key must be decrypted first.
func keyPairError(err error) error {
	err = unwrapPath(err)
	if strings.Contains(err.Error(), "ENCRYPTED") || strings.Contains(err.Error(), "failed to parse private key") {
		return fmt.Errorf("%w (an encrypted key is not supported: decrypt it, e.g. openssl pkey -in KEY -out PLAIN)", err)
	}
	return err
}

// ExplainTLS returns err with a hint naming the settings to check when err
// is a failed verification of the server's certificate, and err itself
// otherwise. ca names the setting that holds the certificate authority
// (ca, sslrootcert), host the one that makes the host name checked (""
// when it always is), client those of the client certificate.
func ExplainTLS(err error, ca, host, client string) error {
	if err == nil {
		return nil
	}
	var (
		hne x509.HostnameError
		uae x509.UnknownAuthorityError
		cie x509.CertificateInvalidError
		cve *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &hne):
		checked := ""
		if host != "" {
			checked = " (" + host + " checks it)"
		}
		return fmt.Errorf("the server's TLS certificate is not valid for the host in the target URL%s: connect by a name or address the certificate holds (%s): %w", checked, hostsOf(hne.Certificate), err)
	case errors.As(err, &uae):
		return fmt.Errorf("the server's TLS certificate is not signed by a trusted authority: set %s to the CA that signed it: %w", ca, err)
	case errors.As(err, &cie):
		return fmt.Errorf("the server's TLS certificate is not valid (expired, or not for servers): %w", err)
	case errors.As(err, &cve):
		return fmt.Errorf("the server's TLS certificate was not accepted (check %s): %w", ca, err)
	case strings.Contains(err.Error(), "tls: certificate required"), strings.Contains(err.Error(), "tls: bad certificate"),
		strings.Contains(err.Error(), "tls: unknown certificate authority"):
		return fmt.Errorf("the server refused soakd's TLS client certificate or wants one: check %s: %w", client, err)
	}
	return err
}

// TLSRefused reports whether err is a TLS certificate refusal (the
// server's certificate did not verify: unknown authority, wrong host,
// expired; or the server refused soakd's client certificate): the same
// files will be refused again, so waiting for the target cannot help.
func TLSRefused(err error) bool {
	return err != nil && ExplainTLS(err, "", "", "") != err
}

func hostsOf(c *x509.Certificate) string {
	if c == nil {
		return "none"
	}
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ReadTLSParams reads an HTTP sink's insecure= and TLSParams from p, on
// whether its URL turns TLS on; how says how a URL turns it on
// ("prom+https://"), for the errors.
func ReadTLSParams(p *urlparam.Query, on bool, how string) (insecure bool, files TLSFiles) {
	insecure = p.Bool("insecure")
	if insecure && !on {
		p.Addf("insecure=true needs TLS (%s)", how)
	}
	files, err := ParseTLSFiles(p.Values())
	if err != nil {
		p.Add(err)
		files = TLSFiles{}
	}
	if files.Set() && !on {
		p.Addf("ca, cert, key: TLS is off; use %s", how)
	}
	if insecure && files.CA != "" {
		p.Addf("insecure=true with ca: the CA would not be checked; give one of them")
	}
	return insecure, files
}

// LoadClientTLS reads files into the TLS configuration of a client that
// checks the server's certificate unless insecure; nil when TLS is off.
// Every problem names its parameter.
func LoadClientTLS(on, insecure bool, files TLSFiles) (*tls.Config, error) {
	if !on {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} //nolint:gosec // only when the user asks
	if err := files.Apply(tc); err != nil {
		return nil, err
	}
	return tc, nil
}

// ProtocolMismatch is a target that speaks another protocol than its URL
// says: TLS on for a plain-text server, or off for a TLS-only one, or
// another protocol altogether (HTTP at a Redis URL). Waiting cannot help;
// Err's text says what to change in the URL.
type ProtocolMismatch struct{ Err error }

func (e *ProtocolMismatch) Error() string { return e.Err.Error() }
func (e *ProtocolMismatch) Unwrap() error { return e.Err }

// IsProtocolMismatch reports whether err is, or wraps, a *ProtocolMismatch.
func IsProtocolMismatch(err error) bool {
	var m *ProtocolMismatch
	return errors.As(err, &m)
}
