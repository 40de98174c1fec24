package nodetls

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// A node certificate names its node twice, so that tools which only show a
// subject (openssl x509 -subject, Kafka's principal mapping) and tools
// which read SANs agree: the subject's common name is "node-<id>" and a URI
// SAN is "strand://node/<id>". Either one alone is accepted (certificates
// made with other tools); when both are present they must agree.

// NodeCommonName is the subject common name of node id's certificate.
func NodeCommonName(id int32) string { return "node-" + strconv.Itoa(int(id)) }

// NodeURI is the URI SAN of node id's certificate.
func NodeURI(id int32) *url.URL {
	return &url.URL{Scheme: "strand", Host: "node", Path: "/" + strconv.Itoa(int(id))}
}

// ErrNotANode: the certificate names no node (a client's certificate).
var ErrNotANode = errors.New("the certificate names no Strand node (want subject CN=node-<id> or URI SAN strand://node/<id>)")

// NodeID returns the node a certificate names.
func NodeID(cert *x509.Certificate) (int32, error) {
	fromURI, uriOK := int32(-1), false
	for _, u := range cert.URIs {
		if u.Scheme != "strand" || u.Host != "node" {
			continue
		}
		id, err := parseID(strings.TrimPrefix(u.Path, "/"))
		if err != nil {
			return -1, fmt.Errorf("URI SAN %s: %w", u, err)
		}
		if uriOK && id != fromURI {
			return -1, fmt.Errorf("the certificate names two nodes (%d and %d)", fromURI, id)
		}
		fromURI, uriOK = id, true
	}
	fromCN, cnOK := int32(-1), false
	if rest, ok := strings.CutPrefix(cert.Subject.CommonName, "node-"); ok {
		id, err := parseID(rest)
		if err != nil {
			return -1, fmt.Errorf("subject CN %q: %w", cert.Subject.CommonName, err)
		}
		fromCN, cnOK = id, true
	}
	switch {
	case uriOK && cnOK && fromURI != fromCN:
		return -1, fmt.Errorf("the certificate's CN names node %d and its URI SAN node %d", fromCN, fromURI)
	case uriOK:
		return fromURI, nil
	case cnOK:
		return fromCN, nil
	}
	return -1, ErrNotANode
}

func parseID(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return -1, fmt.Errorf("%q is not a node id", s)
	}
	return int32(n), nil
}
