package kafka

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/cluster"
	"github.com/strandmq/strand/internal/sasl"
)

// DescribeUserScramCredentials (50) v0 and AlterUserScramCredentials (51)
// v0: SCRAM users managed over the Kafka API (KIP-554).
//
// Behavior:
//   - Credentials live in the cluster metadata (meta.json on a single node,
//     the raft image in a cluster) as salt, iterations, StoredKey and
//     ServerKey: the salted password an upsertion carries is turned into
//     the two keys and dropped; no password is ever stored.
//   - A SASL listener accepts these users beside the fixed ones of
//     --sasl-users (a fixed user of the same name wins); PLAIN checks a
//     run-time user's password against its SCRAM credential.
//   - Describe: users null or empty lists every user; an unknown user is
//     RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE; each user
//     answers its mechanisms and iterations, never a salt or key.
//   - Alter: per user, all or nothing. An empty name or iterations outside
//     4096–16384, a salt under 16 bytes or an empty salted password is
//     UNACCEPTABLE_CREDENTIAL; an unknown mechanism
//     UNSUPPORTED_SASL_MECHANISM; a user in both a deletion and an
//     upsertion (or one mechanism twice) DUPLICATE_RESOURCE; deleting a
//     credential that does not exist RESOURCE_NOT_FOUND. The valid users'
//     changes are applied together, in one metadata change.
//   - When a user has no credential left, its live connections are closed
//     (on every node: each watches the metadata).
//   - Cluster:Describe and Cluster:Alter are asked by the authorization
//     gate (authz.go).

// mechanisms maps KIP-554's mechanism numbers to names.
var mechanisms = map[int8]string{1: sasl.ScramSHA256, 2: sasl.ScramSHA512}

func mechanismNumber(name string) int8 {
	for n, m := range mechanisms {
		if m == name {
			return n
		}
	}
	return 0
}

// Kafka's bounds on a SCRAM credential's iterations (ScramMechanism).
const (
	minScramIterations = 4096
	maxScramIterations = 16384
	minScramSaltBytes  = 16
)

// scramCredential is the sasl.Source of the metadata's users.
func (s *Server) scramCredential(user, mechanism string) (sasl.Credential, bool) {
	c, ok := s.b.ScramCredential(user, mechanism)
	if !ok {
		return sasl.Credential{}, false
	}
	return sasl.Credential{Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}, true
}

// closeSessionsOfDeletedUsers closes every connection authenticated as a
// run-time user that has no credential left.
func (s *Server) closeSessionsOfDeletedUsers(users map[string][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.mu.conns {
		u := c.authUser.Load()
		if u == nil || c.tokenAuth.Load() || s.users.IsFixed(*u) || len(users[*u]) > 0 {
			continue
		}
		s.logger.Info("kafka: closing a connection of a deleted user", "user", *u, "remote", c.nc.RemoteAddr().String())
		c.cancel()
		c.nc.Close()
	}
}

func (s *Server) handleDescribeUserScramCredentials(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	all := s.b.ScramUsers()
	var names []string
	if len(req.Users) == 0 {
		for u := range all {
			names = append(names, u)
		}
		slices.Sort(names)
	} else {
		for _, u := range req.Users {
			names = append(names, u.Name)
		}
	}
	count := map[string]int{}
	for _, u := range names {
		count[u]++
	}
	for _, u := range names {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u
		switch {
		case count[u] > 1:
			r.ErrorCode, r.ErrorMessage = kerr.DuplicateResource.Code, kmsg.StringPtr("user "+u+" is named more than once")
		case len(all[u]) == 0:
			r.ErrorCode, r.ErrorMessage = kerr.ResourceNotFound.Code, kmsg.StringPtr("no SCRAM credential for user "+u)
		default:
			for _, m := range all[u] {
				c, _ := s.b.ScramCredential(u, m)
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism, info.Iterations = mechanismNumber(m), int32(c.Iterations)
				r.CredentialInfos = append(r.CredentialInfos, info)
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

func (s *Server) handleAlterUserScramCredentials(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	type change struct {
		puts []cluster.PutScramCredential
		dels []cluster.DeleteScramCredential
	}
	var order []string
	changes := map[string]*change{}
	failed := map[string]struct {
		code int16
		msg  string
	}{}
	fail := func(user string, code int16, msg string) {
		if _, already := failed[user]; !already {
			failed[user] = struct {
				code int16
				msg  string
			}{code, msg}
		}
	}
	get := func(user string) *change {
		if changes[user] == nil {
			changes[user] = &change{}
			order = append(order, user)
		}
		return changes[user]
	}
	seen := map[[2]string]bool{}
	dup := func(user, mech string) bool {
		k := [2]string{user, mech}
		d := seen[k]
		seen[k] = true
		return d
	}
	for _, d := range req.Deletions {
		c := get(d.Name)
		m, ok := mechanisms[d.Mechanism]
		switch {
		case d.Name == "":
			fail(d.Name, kerr.UnacceptableCredential.Code, "empty user name")
		case !ok:
			fail(d.Name, kerr.UnsupportedSaslMechanism.Code, "unknown SCRAM mechanism")
		case dup(d.Name, m):
			fail(d.Name, kerr.DuplicateResource.Code, "a credential is named more than once")
		default:
			if _, exists := s.b.ScramCredential(d.Name, m); !exists {
				fail(d.Name, kerr.ResourceNotFound.Code, "no "+m+" credential for user "+d.Name)
			}
			c.dels = append(c.dels, cluster.DeleteScramCredential{User: d.Name, Mechanism: m})
		}
	}
	for _, u := range req.Upsertions {
		c := get(u.Name)
		m, ok := mechanisms[u.Mechanism]
		switch {
		case u.Name == "":
			fail(u.Name, kerr.UnacceptableCredential.Code, "empty user name")
		case !ok:
			fail(u.Name, kerr.UnsupportedSaslMechanism.Code, "unknown SCRAM mechanism")
		case len(c.dels) > 0 || dup(u.Name, m):
			fail(u.Name, kerr.DuplicateResource.Code, "a user is both deleted and upserted, or a credential is named more than once")
		case u.Iterations < minScramIterations || u.Iterations > maxScramIterations:
			fail(u.Name, kerr.UnacceptableCredential.Code, "iterations must be between 4096 and 16384")
		case len(u.Salt) < minScramSaltBytes || len(u.SaltedPassword) == 0:
			fail(u.Name, kerr.UnacceptableCredential.Code, "the salt must have at least 16 bytes and the salted password some")
		default:
			cred, err := sasl.DeriveCredential(m, u.Salt, int(u.Iterations), u.SaltedPassword)
			if err != nil {
				fail(u.Name, kerr.UnsupportedSaslMechanism.Code, err.Error())
				continue
			}
			c.puts = append(c.puts, cluster.PutScramCredential{User: u.Name, Mechanism: m,
				Credential: cluster.ScramCredential{Salt: cred.Salt, Iterations: cred.Iterations, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}})
		}
	}
	var puts []cluster.PutScramCredential
	var dels []cluster.DeleteScramCredential
	for _, u := range order {
		if _, bad := failed[u]; !bad {
			puts, dels = append(puts, changes[u].puts...), append(dels, changes[u].dels...)
		}
	}
	var err error
	if len(puts)+len(dels) > 0 {
		err = s.b.AlterScramCredentials(puts, dels)
		s.logUnknown("alter SCRAM credentials", err)
	}
	for _, u := range order {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = u
		if f, bad := failed[u]; bad {
			r.ErrorCode, r.ErrorMessage = f.code, kmsg.StringPtr(f.msg)
		} else if err != nil {
			r.ErrorCode, r.ErrorMessage = errorCode(err), errMessage(err)
		} else {
			s.logger.Info("kafka: SCRAM credentials altered", "user", u, "upserted", len(changes[u].puts), "deleted", len(changes[u].dels))
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
