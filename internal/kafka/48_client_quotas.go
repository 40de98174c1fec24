package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strandmq/strand/internal/cluster"
)

// DescribeClientQuotas (48) v0-v1 and AlterClientQuotas (49) v0-v1.
//
// Behavior:
//   - Entities are a user, a client id, or both ("user" and "client-id"
//     components; a null name is the default entity). Values:
//     producer_byte_rate, consumer_byte_rate and request_percentage,
//     enforced (quota.go). The "ip" entity and other keys answer
//     INVALID_REQUEST: Strand does not enforce them.
//   - Alter: per entry, all or nothing; a value must be positive; Remove
//     drops a key. ValidateOnly checks without applying. The valid entries
//     are applied together in one metadata change (meta.json, or raft).
//   - Describe: components filter by type with match type EXACT (0, a
//     name), DEFAULT (1) or ANY (2, any entity with that type); Strict
//     keeps only entities with no other component types. Entities answer
//     in a stable order.
//   - Cluster:DescribeConfigs / Cluster:AlterConfigs are asked by the
//     authorization gate.

const (
	quotaEntityUser   = "user"
	quotaEntityClient = "client-id"
)

var quotaKeys = map[string]bool{quotaProduce: true, quotaFetch: true, quotaRequest: true}

// quotaEntity reads an entity's components; ok is false for an unknown
// type or a type named twice.
func quotaEntity(parts []struct {
	typ  string
	name *string
}) (cluster.QuotaEntity, error) {
	var e cluster.QuotaEntity
	for _, p := range parts {
		name := cluster.QuotaDefault
		if p.name != nil {
			name = *p.name
			if name == "" || name == cluster.QuotaDefault {
				return e, fmt.Errorf("invalid %s name %q", p.typ, name)
			}
		}
		switch {
		case p.typ == quotaEntityUser && e.User == "":
			e.User = name
		case p.typ == quotaEntityClient && e.ClientID == "":
			e.ClientID = name
		default:
			return e, fmt.Errorf("entity type %q is unknown, named twice, or not supported (Strand enforces user and client-id quotas)", p.typ)
		}
	}
	if e.User == "" && e.ClientID == "" {
		return e, fmt.Errorf("an empty entity")
	}
	return e, nil
}

func (s *Server) handleAlterClientQuotas(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	var changes []cluster.AlterClientQuota
	var applied []int
	for _, entry := range req.Entries {
		r := kmsg.NewAlterClientQuotasResponseEntry()
		var parts []struct {
			typ  string
			name *string
		}
		for _, ent := range entry.Entity {
			r.Entity = append(r.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: ent.Type, Name: ent.Name})
			parts = append(parts, struct {
				typ  string
				name *string
			}{ent.Type, ent.Name})
		}
		e, err := quotaEntity(parts)
		change := cluster.AlterClientQuota{Entity: e, Set: map[string]float64{}}
		for _, op := range entry.Ops {
			switch {
			case err != nil:
			case !quotaKeys[op.Key]:
				err = fmt.Errorf("quota %q is not supported (Strand enforces %s, %s and %s)", op.Key, quotaProduce, quotaFetch, quotaRequest)
			case op.Remove:
				change.Remove = append(change.Remove, op.Key)
			case op.Value <= 0:
				err = fmt.Errorf("quota %s must be positive, not %v", op.Key, op.Value)
			default:
				change.Set[op.Key] = op.Value
			}
		}
		if err != nil {
			r.ErrorCode, r.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		} else if !req.ValidateOnly {
			changes = append(changes, change)
			applied = append(applied, len(resp.Entries))
		}
		resp.Entries = append(resp.Entries, r)
	}
	if len(changes) > 0 {
		if err := s.b.AlterClientQuotas(changes); err != nil {
			s.logUnknown("alter client quotas", err)
			for _, i := range applied {
				resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = errorCode(err), errMessage(err)
			}
		} else {
			if s.quotas != nil {
				s.quotas.set(s.b.ClientQuotas()) // read your own write
			}
			for _, c := range changes {
				s.logger.Info("kafka: client quota altered", "user", c.Entity.User, "client_id", c.Entity.ClientID, "set", c.Set, "removed", c.Remove)
			}
		}
	}
	return resp, nil
}

func (s *Server) handleDescribeClientQuotas(_ context.Context, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	for _, c := range req.Components {
		if c.EntityType != quotaEntityUser && c.EntityType != quotaEntityClient {
			resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(fmt.Sprintf("entity type %q is not supported", c.EntityType))
			return resp, nil
		}
	}
	part := func(e cluster.QuotaEntity, typ string) string {
		if typ == quotaEntityUser {
			return e.User
		}
		return e.ClientID
	}
	matches := func(e cluster.QuotaEntity) bool {
		named := map[string]bool{}
		for _, c := range req.Components {
			named[c.EntityType] = true
			v := part(e, c.EntityType)
			switch c.MatchType {
			case 0: // exact
				if v == "" || c.Match == nil || v != *c.Match {
					return false
				}
			case 1: // default
				if v != cluster.QuotaDefault {
					return false
				}
			default: // any
				if v == "" {
					return false
				}
			}
		}
		if req.Strict {
			for _, typ := range []string{quotaEntityUser, quotaEntityClient} {
				if !named[typ] && part(e, typ) != "" {
					return false
				}
			}
		}
		return true
	}
	all := s.b.ClientQuotas()
	entities := make([]cluster.QuotaEntity, 0, len(all))
	for e := range all {
		if matches(e) {
			entities = append(entities, e)
		}
	}
	slices.SortFunc(entities, func(a, b cluster.QuotaEntity) int {
		return strings.Compare(a.User+"\x00"+a.ClientID, b.User+"\x00"+b.ClientID)
	})
	for _, e := range entities {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, typ := range []string{quotaEntityUser, quotaEntityClient} {
			v := part(e, typ)
			if v == "" {
				continue
			}
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type = typ
			if v != cluster.QuotaDefault {
				ent.Name = kmsg.StringPtr(v)
			}
			entry.Entity = append(entry.Entity, ent)
		}
		keys := make([]string, 0, len(all[e]))
		for k := range all[e] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			entry.Values = append(entry.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: all[e][k]})
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp, nil
}
