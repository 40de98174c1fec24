package main

import (
	"cmp"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/strandmq/strand/internal/nodetls"
)

// certRow is one line of "strand cert list": a certificate, or a key
// without one.
type certRow struct {
	File     string    `json:"file"`
	Kind     string    `json:"kind"` // "ca", "node <id>", "client <user>", "key", "unreadable"
	Subject  string    `json:"subject_cn,omitempty"`
	SANs     []string  `json:"sans,omitempty"`
	NotAfter time.Time `json:"not_after,omitzero"`
	Expired  bool      `json:"expired,omitempty"`
	Problems []string  `json:"problems,omitempty"`

	order certOrder
}

// certOrder sorts the list: the CA, nodes by id, clients by name, then
// the rest.
type certOrder struct {
	rank int
	node int32
	name string
}

func newCertListCmd(o *certOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the certificates in --certs-dir: kind, names, expiry, and keys that are missing or do not match",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := o.certsDir()
			if err != nil {
				return err
			}
			asJSON, err := (&clientOptions{output: output}).json()
			if err != nil {
				return err
			}
			rows, err := listCerts(dir, time.Now())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			if len(rows) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no certificates in %s: run \"strand cert create-ca --certs-dir %s\" to start\n", dir, dir)
				return nil
			}
			return printCertTable(cmd, rows, time.Now())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	return cmd
}

func printCertTable(cmd *cobra.Command, rows []certRow, now time.Time) error {
	tw := newTable(cmd.OutOrStdout())
	fmt.Fprintln(tw, "FILE\tKIND\tSUBJECT CN\tSANS\tEXPIRES\t\tPROBLEMS")
	for _, r := range rows {
		expires, left := "-", "-"
		if !r.NotAfter.IsZero() {
			expires = r.NotAfter.UTC().Format(time.DateOnly)
			left = "EXPIRED"
			if !r.Expired {
				left = fmt.Sprintf("in %dd", int(r.NotAfter.Sub(now)/(24*time.Hour)))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.File, r.Kind, dash(r.Subject), dash(strings.Join(r.SANs, ",")),
			expires, left, dash(strings.Join(r.Problems, "; ")))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listCerts reads every *.crt and *.key in dir. A certificate x.crt pairs
// with x.key; each row says what is wrong with its pair.
func listCerts(dir string, now time.Time) ([]certRow, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no directory %s: run \"strand cert create-ca --certs-dir %s\" to start one", dir, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("cert: %w", err)
	}
	have := map[string]bool{}
	for _, e := range entries {
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err == nil && fi.Mode().IsRegular() { // symlinks followed
			have[e.Name()] = true
		}
	}
	// The CA in dir, to tell certificates it did not sign.
	var cas []*x509.Certificate
	if have[caCertFile] {
		if raw, err := os.ReadFile(filepath.Join(dir, caCertFile)); err == nil {
			cas, _ = parseCertsPEM(raw)
		}
	}
	rows := []certRow{}
	for name := range have {
		base, isCert := strings.CutSuffix(name, ".crt")
		switch {
		case isCert:
			rows = append(rows, certFileRow(dir, name, have[base+".key"], cas, now))
		case strings.HasSuffix(name, ".key") && !have[strings.TrimSuffix(name, ".key")+".crt"]:
			rows = append(rows, certRow{File: name, Kind: "key", order: certOrder{rank: 3, name: name},
				Problems: []string{"a key without a certificate (no " + strings.TrimSuffix(name, ".key") + ".crt)"}})
		}
	}
	slices.SortFunc(rows, func(a, b certRow) int {
		return cmp.Or(cmp.Compare(a.order.rank, b.order.rank), cmp.Compare(a.order.node, b.order.node),
			strings.Compare(a.order.name, b.order.name), strings.Compare(a.File, b.File))
	})
	return rows, nil
}

// certFileRow describes dir/name and its key.
func certFileRow(dir, name string, hasKey bool, cas []*x509.Certificate, now time.Time) certRow {
	row := certRow{File: name, Kind: "unreadable", order: certOrder{rank: 3, name: name}}
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err == nil {
		var certs []*x509.Certificate
		if certs, err = parseCertsPEM(raw); err == nil {
			row = describeCert(name, certs[0], cas, now)
		}
	}
	if err != nil {
		row.Problems = append(row.Problems, err.Error())
		return row
	}
	keyName := strings.TrimSuffix(name, ".crt") + ".key"
	switch {
	case !hasKey && row.Kind == "ca":
		// The CA key may well be kept offline (--ca-key): not a problem.
	case !hasKey:
		row.Problems = append(row.Problems, "no key "+keyName)
	default:
		cert, _ := parseCertsPEM(raw)
		if p := keyProblem(filepath.Join(dir, keyName), keyName, cert[0]); p != "" {
			row.Problems = append(row.Problems, p)
		}
	}
	return row
}

// describeCert classifies c as nodetls does: a CA, a node (by the name it
// carries), or a client.
func describeCert(name string, c *x509.Certificate, cas []*x509.Certificate, now time.Time) certRow {
	row := certRow{File: name, Subject: c.Subject.CommonName, SANs: certSANs(c), NotAfter: c.NotAfter, Expired: now.After(c.NotAfter)}
	id, err := nodetls.NodeID(c)
	switch {
	case c.IsCA:
		row.Kind, row.order = "ca", certOrder{rank: 0, name: name}
	case err == nil:
		row.Kind, row.order = "node "+strconv.Itoa(int(id)), certOrder{rank: 1, node: id, name: name}
	case errors.Is(err, nodetls.ErrNotANode):
		row.Kind, row.order = "client "+c.Subject.CommonName, certOrder{rank: 2, name: c.Subject.CommonName}
	default:
		row.Kind, row.order = "invalid", certOrder{rank: 3, name: name}
		row.Problems = append(row.Problems, "names a node badly: "+err.Error())
	}
	// A node's certificate under another name, or a file named as strand
	// cert names them holding another's: a server started with it would
	// have the wrong identity. Other names (other tools') are left be.
	claimsName := err == nil || strings.HasPrefix(name, "node-") || strings.HasPrefix(name, "client-")
	if want := certFileName(c, id, err); want != "" && name != want && claimsName {
		row.Problems = append(row.Problems, "its file would be "+want)
	}
	if now.Before(c.NotBefore) {
		row.Problems = append(row.Problems, "not valid before "+c.NotBefore.UTC().Format(time.RFC3339))
	}
	if !c.IsCA && len(cas) > 0 && !slices.ContainsFunc(cas, func(ca *x509.Certificate) bool { return c.CheckSignatureFrom(ca) == nil }) {
		row.Problems = append(row.Problems, "not signed by "+caCertFile)
	}
	return row
}

// keyProblem says what is wrong with the key at path for c, or "".
func keyProblem(path, name string, c *x509.Certificate) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "key " + name + ": " + err.Error()
	}
	key, err := parseKeyPEM(raw)
	if err != nil {
		return "key " + name + ": " + err.Error()
	}
	if !publicKeyMatches(key.Public(), c.PublicKey) {
		return name + " does not match this certificate"
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Sprintf("%s is readable by others (mode %04o): chmod 600 %s", name, fi.Mode().Perm(), path)
	}
	return ""
}

// certFileName is the file strand cert writes c to ("" for a CA or a
// certificate that names a node badly).
func certFileName(c *x509.Certificate, id int32, nodeErr error) string {
	switch {
	case c.IsCA:
		return ""
	case nodeErr == nil:
		return nodetls.NodeCommonName(id) + ".crt"
	case errors.Is(nodeErr, nodetls.ErrNotANode):
		return "client-" + c.Subject.CommonName + ".crt"
	}
	return ""
}
