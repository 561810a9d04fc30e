package kubecp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certLifetime is how long the control plane's certificates are valid: a
// test run, with room for a clock that is off.
const certLifetime = 24 * time.Hour

// pki is a control plane's certificates: one CA that signs the serving
// certificate and every client's, and the key service-account tokens are
// signed with. Each is written under dir as NAME.crt and NAME.key.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte
	serial int64
}

// keyPair is a certificate and its key, PEM-encoded, and where they were
// written.
type keyPair struct {
	CertPEM, KeyPEM   []byte
	CertFile, KeyFile string
}

func newPKI(dir string) (*pki, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hutch-kubetest-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("signing the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	p := &pki{dir: dir, ca: ca, caKey: key, serial: 1}
	kp, err := p.write("ca", der, key)
	if err != nil {
		return nil, err
	}
	p.caPEM = kp.CertPEM
	return p, nil
}

// caFile is the CA certificate's path.
func (p *pki) caFile() string { return filepath.Join(p.dir, "ca.crt") }

// serving issues a server certificate for the loopback addresses and the
// names the apiserver answers to in a cluster.
func (p *pki) serving(name string, dnsNames []string, ips []net.IP) (keyPair, error) {
	return p.issue(name, pkix.Name{CommonName: name}, x509.ExtKeyUsageServerAuth, dnsNames, ips)
}

// client issues a client certificate for user cn in groups orgs (the
// apiserver reads the user from CN and the groups from O).
func (p *pki) client(name, cn string, orgs ...string) (keyPair, error) {
	return p.issue(name, pkix.Name{CommonName: cn, Organization: orgs}, x509.ExtKeyUsageClientAuth, nil, nil)
}

func (p *pki) issue(name string, subject pkix.Name, usage x509.ExtKeyUsage, dnsNames []string, ips []net.IP) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generating the key of %s: %w", name, err)
	}
	p.serial++
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, key.Public(), p.caKey)
	if err != nil {
		return keyPair{}, fmt.Errorf("signing the certificate of %s: %w", name, err)
	}
	return p.write(name, der, key)
}

// serviceAccountKey writes the RSA key pair service-account tokens are
// signed (sa.key) and verified (sa.pub) with.
func (p *pki) serviceAccountKey() (keyFile, pubFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("generating the service-account key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", fmt.Errorf("encoding the service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", "", fmt.Errorf("encoding the service-account public key: %w", err)
	}
	keyFile, pubFile = filepath.Join(p.dir, "sa.key"), filepath.Join(p.dir, "sa.pub")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return "", "", err
	}
	return keyFile, pubFile, nil
}

func (p *pki) write(name string, der []byte, key crypto.Signer) (keyPair, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return keyPair{}, fmt.Errorf("encoding the key of %s: %w", name, err)
	}
	kp := keyPair{
		CertPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		CertFile: filepath.Join(p.dir, name+".crt"),
		KeyFile:  filepath.Join(p.dir, name+".key"),
	}
	if err := os.WriteFile(kp.CertFile, kp.CertPEM, 0o644); err != nil {
		return keyPair{}, err
	}
	if err := os.WriteFile(kp.KeyFile, kp.KeyPEM, 0o600); err != nil {
		return keyPair{}, err
	}
	return kp, nil
}
