package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/strandmq/strand/internal/schemareg"
)

// schemaDecoder turns Confluent wire-format keys and values into JSON
// (consume --decode): it fetches each schema id once from the registry,
// with its references, and decodes with the same code the broker validates
// with (package schemareg).
type schemaDecoder struct {
	reg      *registryOptions
	cl       *sr.Client
	compiled map[int]*schemareg.Compiled
	failed   map[int]error
}

func newSchemaDecoder(reg *registryOptions) (*schemaDecoder, error) {
	cl, err := reg.client()
	if err != nil {
		return nil, err
	}
	return &schemaDecoder{reg: reg, cl: cl, compiled: map[int]*schemareg.Compiled{}, failed: map[int]error{}}, nil
}

// decode returns b decoded to JSON, or b unchanged when it is not in the
// wire format. A value whose schema cannot be fetched or that does not
// decode is an error: consume says so instead of printing bytes that look
// decoded.
func (d *schemaDecoder) decode(ctx context.Context, b []byte) ([]byte, error) {
	id, rest, err := schemareg.SplitWire(b)
	if err != nil {
		return b, nil
	}
	c, err := d.schema(ctx, id)
	if err != nil {
		return nil, err
	}
	out, err := c.Decode(rest)
	if err != nil {
		return nil, fmt.Errorf("schema id %d (%s): %w", id, c.Type, err)
	}
	return out, nil
}

// decodeRecord replaces r's wire-format key and value with their JSON.
func (o *consumeOptions) decodeRecord(ctx context.Context, r *kgo.Record) error {
	// A key that only looks like the wire format (binary keys may start
	// with a zero byte) is printed as it is.
	if k, err := o.decoder.decode(ctx, r.Key); err == nil {
		r.Key = k
	}
	var err error
	if r.Value, err = o.decoder.decode(ctx, r.Value); err != nil {
		return fmt.Errorf("%s[%d] offset %d: value: %w", r.Topic, r.Partition, r.Offset, err)
	}
	return nil
}

// schema compiles schema id, fetched with its references into a registry
// state of its own.
func (d *schemaDecoder) schema(ctx context.Context, id int) (*schemareg.Compiled, error) {
	if c, ok := d.compiled[id]; ok {
		return c, nil
	}
	if err, ok := d.failed[id]; ok {
		return nil, err
	}
	c, err := d.fetch(ctx, id)
	if err != nil {
		err = d.reg.registryErr(fmt.Errorf("schema id %d: %w", id, err))
		d.failed[id] = err
		return nil, err
	}
	d.compiled[id] = c
	return c, nil
}

func (d *schemaDecoder) fetch(ctx context.Context, id int) (*schemareg.Compiled, error) {
	s, err := d.cl.SchemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	store := schemareg.NewMemStore()
	seen := map[string]bool{}
	var add func(refs []sr.SchemaReference, depth int) error
	add = func(refs []sr.SchemaReference, depth int) error {
		if depth > 32 {
			return errors.New("references nest too deep")
		}
		for _, ref := range refs {
			key := fmt.Sprintf("%s/%d", ref.Subject, ref.Version)
			if seen[key] {
				continue
			}
			seen[key] = true
			rs, err := d.cl.SchemaByVersion(ctx, ref.Subject, ref.Version)
			if err != nil {
				return fmt.Errorf("reference %s: %w", ref.Name, err)
			}
			if err := add(rs.References, depth+1); err != nil {
				return err
			}
			if err := put(ctx, store, ref.Subject, ref.Version, rs.ID, rs.Schema); err != nil {
				return err
			}
		}
		return nil
	}
	if err := add(s.References, 0); err != nil {
		return nil, err
	}
	// The schema itself, under a subject no reference can have.
	if err := put(ctx, store, "\x00decode", 1, id, s); err != nil {
		return nil, err
	}
	var c *schemareg.Compiled
	store.View(func(st *schemareg.State) { c, err = st.Compile(id) })
	return c, err
}

func put(ctx context.Context, store *schemareg.MemStore, subject string, version, id int, s sr.Schema) error {
	refs := make([]schemareg.Reference, len(s.References))
	for i, r := range s.References {
		refs[i] = schemareg.Reference{Name: r.Name, Subject: r.Subject, Version: r.Version}
	}
	typ := strings.ToUpper(s.Type.String())
	return store.Write(ctx, schemareg.Record{
		Key:    schemareg.Key{KeyType: schemareg.KeySchema, Subject: &subject, Version: version, Magic: 1},
		Schema: &schemareg.SchemaValue{Subject: subject, Version: version, ID: id, Schema: s.Schema, SchemaType: typ, References: refs},
	})
}
