package quorum

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/vfs"
)

// A restarted node rejoins at once (issue 39). The controller refuses a
// second live process with a node id (ErrDuplicateBroker) until the
// registered one's session lapses — but a process that holds the node's
// data directory (its lock) can only be the dead one's successor. So at
// every start, under that lock, the node reads the secret token the
// directory holds (written by the process before it), writes a fresh one
// in its place, and registers with the old secret (SuccessorOf) and an
// incarnation id that ends with the SHA-256 of the new one. Only that
// hash reaches the metadata log, inside an id every version of Strand
// takes as opaque: no record changes shape, so nodes not yet upgraded
// apply the registration as before (their FSM refuses unknown fields). A
// registration whose SuccessorOf hashes to the registered incarnation's
// suffix replaces it immediately. A process with another directory has
// no secret to show and is still refused while the registered one lives.
// (With inter-node TLS the registration also comes
// over a connection whose certificate names the node: checkSender.)

// successorFile is the token file, in the raft directory.
const successorFile = "successor.token"

// rotateSuccessorToken reads the token dir holds, if any, and replaces it
// with a new one; it returns both (prev "" when there was none).
func rotateSuccessorToken(dir string) (prev, next string, err error) {
	name := filepath.Join(dir, successorFile)
	b, err := vfs.ReadFile(vfs.Default, name)
	switch {
	case err == nil:
		prev = strings.TrimSpace(string(b))
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("cluster: read %s: %w", name, err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", fmt.Errorf("cluster: successor token: %w", err)
	}
	next = hex.EncodeToString(raw[:])
	if err := vfs.WriteFileSync(vfs.Default, dir, name, []byte(next+"\n")); err != nil {
		return "", "", fmt.Errorf("cluster: write %s: %w", name, err)
	}
	return prev, next, nil
}

// tokenHash is what a registration records of a token.
func tokenHash(token string) string {
	if token == "" {
		return ""
	}
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// tokenSep joins an incarnation id and its token hash.
const tokenSep = "~"

// withTokenHash is the incarnation id inc registers with: inc, then the
// hash of token.
func withTokenHash(inc, token string) string {
	if token == "" {
		return inc
	}
	return inc + tokenSep + tokenHash(token)
}

// tokenHashOf is the token hash an incarnation id ends with ("" if none).
func tokenHashOf(inc string) string {
	i := strings.LastIndex(inc, tokenSep)
	if i < 0 || len(inc)-i-1 != sha256.Size*2 {
		return ""
	}
	return inc[i+1:]
}

// succeeds reports whether registration r proves it holds the data
// directory of old's process (r.SuccessorOf is the secret whose hash
// old's incarnation id ends with).
func succeeds(r cluster.Registration, old cluster.BrokerReg) bool {
	h := tokenHashOf(old.IncarnationID)
	if r.SuccessorOf == "" || h == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(tokenHash(r.SuccessorOf)), []byte(h)) == 1
}
