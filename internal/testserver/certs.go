package testserver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Certs are PEM files made for one test: a CA, a server certificate it
// signed for localhost and 127.0.0.1, a client certificate it signed, and
// a second CA that signed nothing (the wrong CA).
type Certs struct {
	Dir        string
	CA         string // CA certificate
	ServerCert string // server certificate (localhost, 127.0.0.1, ::1)
	ServerKey  string // its key, unencrypted, mode 0600
	ClientCert string // client certificate (CN soakd)
	ClientKey  string // its key, unencrypted
	// ClientKeyEncrypted is the client key as an encrypted PKCS#1 PEM
	// block (the form libpq's and pgx's sslpassword decrypt), with the
	// passphrase KeyPassphrase.
	ClientKeyEncrypted string
	KeyPassphrase      string
	OtherCA            string // a CA that signed neither certificate
}

// NewCerts generates Certs in a temporary directory owned by owner (""
// for the current user; PostgreSQL wants its key owned by itself).
func NewCerts(t testing.TB, owner string) *Certs {
	t.Helper()
	dir := TempDir(t, owner)
	c := &Certs{Dir: dir,
		CA: filepath.Join(dir, "ca.pem"), ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
		ClientKeyEncrypted: filepath.Join(dir, "client-key-encrypted.pem"), KeyPassphrase: "key-passphrase-Qm7v",
		OtherCA: filepath.Join(dir, "other-ca.pem")}
	caKey, caCert, caDER := newCA(t, "soakd test CA")
	_, _, otherDER := newCA(t, "soakd other CA")
	writePEM(t, c.CA, "CERTIFICATE", caDER, owner)
	writePEM(t, c.OtherCA, "CERTIFICATE", otherDER, owner)

	leaf := func(cn string, usage x509.ExtKeyUsage, server bool, certPath, keyPath string) {
		var key crypto.Signer
		var err error
		if server {
			key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		} else {
			// RSA: an encrypted PEM key must be PKCS#1 for sslpassword.
			var rk *rsa.PrivateKey
			rk, err = rsa.GenerateKey(rand.Reader, 2048)
			if err == nil {
				//lint:ignore SA1019 legacy PEM encryption is what sslpassword decrypts
				blk, eerr := x509.EncryptPEMBlock(rand.Reader, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk), []byte(c.KeyPassphrase), x509.PEMCipherAES256) //nolint:staticcheck
				if eerr != nil {
					t.Fatal(eerr)
				}
				writePEMBlock(t, c.ClientKeyEncrypted, blk, owner)
			}
			key = rk
		}
		if err != nil {
			t.Fatal(err)
		}
		tmpl := certTemplate(t, cn)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
		if server {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, certPath, "CERTIFICATE", der, owner)
		writePEM(t, keyPath, "PRIVATE KEY", kder, owner)
	}
	leaf("localhost", x509.ExtKeyUsageServerAuth, true, c.ServerCert, c.ServerKey)
	leaf("soakd", x509.ExtKeyUsageClientAuth, false, c.ClientCert, c.ClientKey)
	return c
}

// certTemplate is a certificate for cn, valid from an hour ago for a day.
func certTemplate(t testing.TB, cn string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func newCA(t testing.TB, cn string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := certTemplate(t, cn)
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	tmpl.BasicConstraintsValid = true
	tmpl.IsCA = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func writePEM(t testing.TB, path, typ string, der []byte, owner string) {
	t.Helper()
	writePEMBlock(t, path, &pem.Block{Type: typ, Bytes: der}, owner)
}

func writePEMBlock(t testing.TB, path string, blk *pem.Block, owner string) {
	t.Helper()
	b := pem.EncodeToMemory(blk)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if owner != "" {
		uid, gid, err := lookupUser(owner)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
}

// OtherHost returns an address on 127.0.0.2, which no certificate of
// NewCerts holds, that forwards every connection to addr: the server
// reached by a host name its certificate does not name. It closes when
// the test ends.
func OtherHost(t testing.TB, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("cannot listen on 127.0.0.2: %v", err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(out, in); out.Close() })
			wg.Go(func() { _, _ = io.Copy(in, out); in.Close() })
		}
	})
	return ln.Addr().String()
}
