package cluster

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

	"github.com/strandmq/strand/internal/vfs"
)

// A restarted node rejoins at once (issue 39). The controller refuses a
// second live process with a node id (ErrDuplicateBroker) until the
// registered one's session lapses — but a process that holds the node's
// data directory (its lock) can only be the dead one's successor. So at
// every start, under that lock, the node reads the secret token the
// directory holds (written by the process before it), writes a fresh one
// in its place, and registers with the old secret (SuccessorOf) and the
// SHA-256 of the new (TokenHash). The registration record carries only
// the hash; a registration whose SuccessorOf hashes to the registered
// incarnation's TokenHash replaces it immediately. A process with another
// directory has no secret to show and is still refused while the
// registered one lives. (With inter-node TLS the registration also comes
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

// succeeds reports whether registration r proves it holds the data
// directory of old's process (r.SuccessorOf is the secret whose hash old
// registered).
func succeeds(r Registration, old BrokerReg) bool {
	if r.SuccessorOf == "" || old.TokenHash == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(tokenHash(r.SuccessorOf)), []byte(old.TokenHash)) == 1
}
