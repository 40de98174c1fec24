package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandmq/strand/internal/nodetls"
)

// newCertCmd is "strand cert": a cluster's certificates without openssl,
// in the layout cockroach cert uses — one directory holding the CA
// (ca.crt, ca.key), each node's pair (node-<id>.crt/.key) and each client
// user's pair (client-<user>.crt/.key). Node certificates name their node
// as package nodetls reads it, so the files this writes are the ones
// inter-node mutual TLS accepts. It never talks to a broker.
func newCertCmd() *cobra.Command {
	o := &certOptions{}
	cmd := &cobra.Command{
		Use:   "cert",
		Short: "Create and list the TLS certificates of a cluster: its CA, nodes and clients",
		Long: `Create and list the TLS certificates of a cluster, in one directory:

    ca.crt, ca.key                 the cluster's certificate authority
    node-<id>.crt, node-<id>.key   a node (subject CN node-<id>, URI SAN strand://node/<id>)
    client-<user>.crt/.key         a client user (subject CN <user>)

Keys are ECDSA P-256 in PKCS#8 PEM, written 0600; certificates 0644.`,
		Example: `  strand cert create-ca --certs-dir certs
  strand cert create-node --certs-dir certs --node-id 1 --host 127.0.0.1 --host localhost
  strand cert create-client --certs-dir certs --user admin
  strand cert list --certs-dir certs`,
	}
	cmd.PersistentFlags().StringVar(&o.dir, "certs-dir", "", "the directory of ca.crt, node-<id>.crt/.key and client-<user>.crt/.key (created 0700 if missing)")
	cmd.AddCommand(newCertCreateCACmd(o), newCertCreateNodeCmd(o), newCertCreateClientCmd(o), newCertListCmd(o))
	return cmd
}

// certOptions are the flags the cert commands share.
type certOptions struct {
	dir       string
	overwrite bool
}

const (
	caCertFile = "ca.crt"
	caKeyFile  = "ca.key"
	// certClockSkew backdates every certificate's not-before, so that a
	// node whose clock runs behind the one that made the certificate
	// still accepts it at once.
	certClockSkew = time.Hour
)

func (o *certOptions) certsDir() (string, error) {
	if o.dir == "" {
		return "", usageErr("--certs-dir is required: the directory of the CA and the certificates (e.g. --certs-dir certs)")
	}
	return o.dir, nil
}

func (o *certOptions) path(name string) string { return filepath.Join(o.dir, name) }

func addOverwriteFlag(cmd *cobra.Command, o *certOptions) {
	cmd.Flags().BoolVar(&o.overwrite, "overwrite", false, "replace files that already exist")
}

func newCertCreateCACmd(o *certOptions) *cobra.Command {
	var caKey string
	var lifetime time.Duration
	cmd := &cobra.Command{
		Use:   "create-ca",
		Short: "Create the cluster's certificate authority (ca.crt and its key)",
		Long: `Create the cluster's certificate authority: --certs-dir/ca.crt and its key
(--certs-dir/ca.key, or --ca-key). Every node and client certificate is signed
by it, and every node trusts exactly it: keep the key somewhere safe, and
offline once the certificates are made (pass --ca-key to the other commands).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := o.certsDir(); err != nil {
				return err
			}
			if err := checkLifetime(lifetime); err != nil {
				return err
			}
			keyPath := caKey
			if keyPath == "" {
				keyPath = o.path(caKeyFile)
			}
			certPath := o.path(caCertFile)
			const why = " (a new CA invalidates every certificate the old one signed)"
			if err := o.checkFree(why, certPath, keyPath); err != nil {
				return err
			}
			now := time.Now()
			tmpl, err := newCertTemplate("Strand cluster CA", now, lifetime)
			if err != nil {
				return err
			}
			tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
			// It signs leaves only: no intermediate CA below it.
			tmpl.MaxPathLen, tmpl.MaxPathLenZero = 0, true
			tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
			key, err := newKey()
			if err != nil {
				return err
			}
			cert, der, err := signCert(tmpl, tmpl, key.Public(), key)
			if err != nil {
				return err
			}
			return o.writePair(cmd.OutOrStdout(), cert, der, key, certPath, keyPath, "")
		},
	}
	cmd.Flags().StringVar(&caKey, "ca-key", "", "write the CA key here instead of --certs-dir/ca.key")
	cmd.Flags().DurationVar(&lifetime, "lifetime", 87600*time.Hour, "how long the CA is valid (10 years)")
	addOverwriteFlag(cmd, o)
	return cmd
}

func newCertCreateNodeCmd(o *certOptions) *cobra.Command {
	var caKey string
	var lifetime time.Duration
	var id int32
	var hosts []string
	cmd := &cobra.Command{
		Use:   "create-node",
		Short: "Create a node's certificate and key (node-<id>.crt, node-<id>.key), signed by the CA",
		Long: `Create node --node-id's certificate and key, signed by the CA in --certs-dir.
The certificate names the node twice (subject CN node-<id>, URI SAN
strand://node/<id>) and every --host as a DNS or IP SAN: list each name and
address clients and the other nodes reach it by. It is good for both ends
of a connection (server and client authentication): a node accepts
connections from its peers and dials them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := o.certsDir(); err != nil {
				return err
			}
			if !cmd.Flags().Changed("node-id") {
				return usageErr("--node-id is required: the id of the node (strand serve --node-id) the certificate is for")
			}
			if id < 0 {
				return usageErr("--node-id %d: a node id is not negative", id)
			}
			if len(hosts) == 0 {
				return usageErr("name at least one --host: each DNS name or IP address clients and the other nodes reach node %d by (e.g. --host 127.0.0.1 --host localhost)", id)
			}
			dnsNames, ips, err := parseHosts(hosts)
			if err != nil {
				return err
			}
			if err := checkLifetime(lifetime); err != nil {
				return err
			}
			base := nodetls.NodeCommonName(id)
			certPath, keyPath := o.path(base+".crt"), o.path(base+".key")
			if err := o.checkFree("", certPath, keyPath); err != nil {
				return err
			}
			ca, err := o.loadCA(caKey)
			if err != nil {
				return err
			}
			tmpl, err := newCertTemplate(base, time.Now(), lifetime)
			if err != nil {
				return err
			}
			tmpl.URIs = append(tmpl.URIs, nodetls.NodeURI(id))
			tmpl.DNSNames, tmpl.IPAddresses = dnsNames, ips
			tmpl.KeyUsage = x509.KeyUsageDigitalSignature
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
			return o.issue(cmd.OutOrStdout(), ca, tmpl, certPath, keyPath)
		},
	}
	cmd.Flags().Int32Var(&id, "node-id", -1, "the node's id (its strand serve --node-id)")
	cmd.Flags().StringArrayVar(&hosts, "host", nil, "a DNS name or IP address the node is reached by; repeatable")
	cmd.Flags().StringVar(&caKey, "ca-key", "", "the CA key, if not --certs-dir/ca.key")
	cmd.Flags().DurationVar(&lifetime, "lifetime", 8760*time.Hour, "how long the certificate is valid (1 year; never past the CA's expiry)")
	addOverwriteFlag(cmd, o)
	return cmd
}

func newCertCreateClientCmd(o *certOptions) *cobra.Command {
	var caKey, user string
	var lifetime time.Duration
	cmd := &cobra.Command{
		Use:   "create-client",
		Short: "Create a client user's certificate and key (client-<user>.crt, client-<user>.key), signed by the CA",
		Long: `Create --user's client certificate and key, signed by the CA in --certs-dir:
subject CN <user>, good for client authentication only. A Kafka listener
with --tls-client-ca ca.crt maps it to a principal by
--ssl-principal-mapping-rules (by default User:CN=<user>).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := o.certsDir(); err != nil {
				return err
			}
			if err := checkClientUser(user); err != nil {
				return err
			}
			if err := checkLifetime(lifetime); err != nil {
				return err
			}
			certPath, keyPath := o.path("client-"+user+".crt"), o.path("client-"+user+".key")
			if err := o.checkFree("", certPath, keyPath); err != nil {
				return err
			}
			ca, err := o.loadCA(caKey)
			if err != nil {
				return err
			}
			tmpl, err := newCertTemplate(user, time.Now(), lifetime)
			if err != nil {
				return err
			}
			tmpl.KeyUsage = x509.KeyUsageDigitalSignature
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
			return o.issue(cmd.OutOrStdout(), ca, tmpl, certPath, keyPath)
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user the certificate is for (its subject CN)")
	cmd.Flags().StringVar(&caKey, "ca-key", "", "the CA key, if not --certs-dir/ca.key")
	cmd.Flags().DurationVar(&lifetime, "lifetime", 8760*time.Hour, "how long the certificate is valid (1 year; never past the CA's expiry)")
	addOverwriteFlag(cmd, o)
	return cmd
}

// parseHosts splits --host values into DNS names and IP addresses.
func parseHosts(hosts []string) (dnsNames []string, ips []net.IP, err error) {
	for _, h := range hosts {
		switch ip := net.ParseIP(h); {
		case ip != nil:
			ips = append(ips, ip)
		case h == "" || strings.ContainsAny(h, ":/[] "):
			return nil, nil, usageErr("--host %q: want a DNS name or an IP address alone (no port, scheme or brackets)", h)
		default:
			dnsNames = append(dnsNames, h)
		}
	}
	return dnsNames, ips, nil
}

// checkClientUser refuses a user name that would make a client's
// certificate read as a node's: nodes trust a peer's certificate for the
// node it names, so a client certificate with CN node-2 would let its
// holder act as node 2. The name is also part of a file name.
func checkClientUser(user string) error {
	if user == "" {
		return usageErr("--user is required: the user the certificate is for (its subject CN)")
	}
	for _, r := range user {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._@-", r)) {
			return usageErr("--user %q: use letters, digits and . _ @ - only (the name is part of the file name client-<user>.crt)", user)
		}
	}
	if strings.HasPrefix(user, ".") {
		return usageErr("--user %q: a user name does not start with a dot", user)
	}
	if _, err := nodetls.NodeID(&x509.Certificate{Subject: pkix.Name{CommonName: user}}); !errors.Is(err, nodetls.ErrNotANode) {
		return usageErr("--user %q: a certificate with subject CN %s reads as a Strand node's (CN node-<id>), and the nodes would take its holder for a node; names starting with \"node-\" are for \"strand cert create-node\" — pick another user name", user, user)
	}
	return nil
}

func checkLifetime(d time.Duration) error {
	if d <= 0 {
		return usageErr("--lifetime %v: want a positive duration (e.g. 8760h for a year)", d)
	}
	return nil
}

// checkFree fails, naming the first, if any of paths exists and
// --overwrite is not set. It runs before anything is written, so that a
// refused command leaves the directory as it was.
func (o *certOptions) checkFree(why string, paths ...string) error {
	if o.overwrite {
		return nil
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return existsErr(p, why)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cert: %w", err)
		}
	}
	return nil
}

func existsErr(path, why string) error {
	return fmt.Errorf("%s already exists: not overwriting it%s; pass --overwrite to replace it", path, why)
}

// certAuthority is the CA that signs node and client certificates.
type certAuthority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// loadCA reads --certs-dir/ca.crt and the CA key (keyPath, or
// --certs-dir/ca.key) and checks they belong together.
func (o *certOptions) loadCA(keyPath string) (*certAuthority, error) {
	certPath := o.path(caCertFile)
	certPEM, err := os.ReadFile(certPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no CA in %s (no %s): run \"strand cert create-ca --certs-dir %s\" first", o.dir, caCertFile, o.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("cert: read the CA: %w", err)
	}
	certs, err := parseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certPath, err)
	}
	cert := certs[0] // a bundle's first certificate is the CA that signs
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("%s is not a CA certificate: run \"strand cert create-ca --certs-dir %s\" to make one", certPath, o.dir)
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("the CA in %s expired on %s: make a new one with \"strand cert create-ca --certs-dir %s --overwrite\", then every node and client certificate again", certPath, cert.NotAfter.UTC().Format(time.RFC3339), o.dir)
	}
	if keyPath == "" {
		keyPath = o.path(caKeyFile)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no CA key at %s: if it is kept elsewhere, pass --ca-key FILE", keyPath)
	}
	if err != nil {
		return nil, fmt.Errorf("cert: read the CA key: %w", err)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	if !publicKeyMatches(key.Public(), cert.PublicKey) {
		return nil, fmt.Errorf("the CA key %s does not belong to %s: pass the CA's own key with --ca-key FILE", keyPath, certPath)
	}
	return &certAuthority{cert: cert, key: key}, nil
}

// issue makes a key pair, has ca sign tmpl for it and writes both.
func (o *certOptions) issue(w io.Writer, ca *certAuthority, tmpl *x509.Certificate, certPath, keyPath string) error {
	note := ""
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		// A certificate outlives its CA only on paper: nobody verifies it
		// once the CA has expired.
		tmpl.NotAfter = ca.cert.NotAfter
		note = "not after is the CA's expiry: a certificate cannot outlive its CA"
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	cert, der, err := signCert(tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return err
	}
	return o.writePair(w, cert, der, key, certPath, keyPath, note)
}

// newCertTemplate is what every certificate shares: a random 128-bit
// serial, the subject and the validity.
func newCertTemplate(cn string, now time.Time, lifetime time.Duration) (*x509.Certificate, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	serial := new(big.Int)
	for serial.Sign() == 0 { // RFC 5280: a positive serial
		var err error
		if serial, err = rand.Int(rand.Reader, limit); err != nil {
			return nil, fmt.Errorf("cert: serial number: %w", err)
		}
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-certClockSkew).UTC().Truncate(time.Second),
		NotAfter:     now.Add(lifetime).UTC().Truncate(time.Second),
	}, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("cert: generate a key: %w", err)
	}
	return key, nil
}

func signCert(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) (*x509.Certificate, []byte, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, nil, fmt.Errorf("cert: sign %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("cert: read back %q: %w", tmpl.Subject.CommonName, err)
	}
	return cert, der, nil
}

// writePair writes the key, then the certificate (so that a certificate
// is never there without its key), and prints what it wrote.
func (o *certOptions) writePair(w io.Writer, cert *x509.Certificate, der []byte, key *ecdsa.PrivateKey, certPath, keyPath, note string) error {
	// PKCS#8 rather than SEC 1 ("EC PRIVATE KEY"): Java Kafka clients
	// read PEM keys only as PKCS#8 (ssl.keystore.type=PEM).
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("cert: encode the key: %w", err)
	}
	for _, dir := range []string{o.dir, filepath.Dir(keyPath)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("cert: %w", err)
		}
	}
	_, keyStatErr := os.Lstat(keyPath)
	if err := writeFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600, o.overwrite); err != nil {
		return err
	}
	if err := writeFileAtomic(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644, o.overwrite); err != nil {
		if keyStatErr != nil { // the key is new: leave no key without its certificate
			os.Remove(keyPath)
		}
		return err
	}
	printCert(w, certPath, cert, note)
	fmt.Fprintf(w, "wrote %s (private key, mode 0600)\n", keyPath)
	return nil
}

// writeFileAtomic writes data to a new file in path's directory, created
// 0600, sets mode, syncs it and moves it to path: a reader sees the old
// file or the whole new one, and a key is never readable by others, not
// even half-written. Without overwrite the move is a hard link, which
// fails if path exists, so a file made meanwhile is not replaced either.
func writeFileAtomic(path string, data []byte, mode os.FileMode, overwrite bool) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("cert: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone after a rename; the second name after a link
	if _, err = f.Write(data); err == nil {
		if err = f.Chmod(mode); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cert: write %s: %w", path, err)
	}
	if !overwrite {
		err = os.Link(tmp, path)
		switch {
		case errors.Is(err, fs.ErrExist):
			return existsErr(path, "")
		case err != nil: // a file system without hard links
			if _, serr := os.Lstat(path); serr == nil {
				return existsErr(path, "")
			}
			err = os.Rename(tmp, path)
		}
	} else {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("cert: write %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil { // the new name survives a crash
		d.Sync()
		d.Close()
	}
	return nil
}

// printCert says what a create command wrote.
func printCert(w io.Writer, path string, c *x509.Certificate, note string) {
	fmt.Fprintf(w, "wrote %s\n", path)
	sans := strings.Join(certSANs(c), ", ")
	if sans == "" {
		sans = "-"
	}
	fmt.Fprintf(w, "  subject     %s\n", c.Subject)
	fmt.Fprintf(w, "  SANs        %s\n", sans)
	fmt.Fprintf(w, "  not before  %s\n", c.NotBefore.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  not after   %s\n", c.NotAfter.UTC().Format(time.RFC3339))
	if note != "" {
		fmt.Fprintf(w, "              (%s)\n", note)
	}
	fmt.Fprintf(w, "  SHA-256     %s\n", certFingerprint(c))
}

// certSANs lists c's subject alternative names as openssl prints them.
func certSANs(c *x509.Certificate) []string {
	var out []string
	for _, d := range c.DNSNames {
		out = append(out, "DNS:"+d)
	}
	for _, ip := range c.IPAddresses {
		out = append(out, "IP:"+ip.String())
	}
	for _, u := range c.URIs {
		out = append(out, "URI:"+u.String())
	}
	for _, e := range c.EmailAddresses {
		out = append(out, "email:"+e)
	}
	return out
}

// certFingerprint is the SHA-256 of c's DER, as "openssl x509
// -fingerprint -sha256" prints it, so the two can be compared.
func certFingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	parts := make([]string, 0, len(sum))
	for i := 0; i < len(h); i += 2 {
		parts = append(parts, h[i:i+2])
	}
	return strings.Join(parts, ":")
}

// parseCertsPEM reads every CERTIFICATE block of a PEM file.
func parseCertsPEM(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("a certificate that does not parse: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM CERTIFICATE in it")
	}
	return out, nil
}

// parseKeyPEM reads the first private key of a PEM file: PKCS#8 as this
// command writes, or SEC 1 / PKCS#1 as openssl and other tools do.
func parseKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return nil, errors.New("no PEM private key in it (want PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY)")
		}
		var key any
		var err error
		switch b.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("a %s that does not parse: %w", b.Type, err)
		}
		s, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("a %T key cannot sign", key)
		}
		return s, nil
	}
}

func publicKeyMatches(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}
