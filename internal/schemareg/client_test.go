package schemareg

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestFranzGoClient drives the registry with franz-go's pkg/sr client and
// serde, a client no one here wrote.
func TestFranzGoClient(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(NewHandler(NewMemStore()))
	defer srv.Close()
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v1 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`
	v2 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
	bad := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"zip","type":"int"}]}`

	s1, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: v1})
	if err != nil || s1.ID != 1 || s1.Version != 1 {
		t.Fatalf("create v1: %+v %v", s1, err)
	}
	s2, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: v2})
	if err != nil || s2.ID != 2 || s2.Version != 2 {
		t.Fatalf("create v2: %+v %v", s2, err)
	}
	if again, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: v2}); err != nil || again.ID != 2 {
		t.Fatalf("idempotent create: %+v %v", again, err)
	}
	_, err = cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: bad})
	var re *sr.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != 409 {
		t.Fatalf("incompatible create: %v", err)
	}
	if got, err := cl.SchemaByID(ctx, 1); err != nil || got.Schema != v1 || got.Type != sr.TypeAvro {
		t.Fatalf("by id: %+v %v", got, err)
	}
	if subs, err := cl.Subjects(ctx); err != nil || !reflect.DeepEqual(subs, []string{"users-value"}) {
		t.Fatalf("subjects: %v %v", subs, err)
	}
	if vs, err := cl.SubjectVersions(ctx, "users-value"); err != nil || !reflect.DeepEqual(vs, []int{1, 2}) {
		t.Fatalf("versions: %v %v", vs, err)
	}
	if latest, err := cl.SchemaByVersion(ctx, "users-value", -1); err != nil || latest.Version != 2 || latest.ID != 2 {
		t.Fatalf("latest: %+v %v", latest, err)
	}
	if got, err := cl.LookupSchema(ctx, "users-value", sr.Schema{Schema: v1}); err != nil || got.Version != 1 {
		t.Fatalf("lookup: %+v %v", got, err)
	}
	if subs, err := cl.SubjectsByID(ctx, 1); err != nil || !reflect.DeepEqual(subs, []string{"users-value"}) {
		t.Fatalf("subjects by id: %v %v", subs, err)
	}
	if res, err := cl.CheckCompatibility(ctx, "users-value", -1, sr.Schema{Schema: bad}); err != nil || res.Is {
		t.Fatalf("check bad: %+v %v", res, err)
	}
	if res, err := cl.CheckCompatibility(ctx, "users-value", -2, sr.Schema{Schema: v2}); err != nil || !res.Is {
		t.Fatalf("check all: %+v %v", res, err)
	}
	if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "users-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if r := cl.Compatibility(ctx, "users-value"); r[0].Err != nil || r[0].Level != sr.CompatNone {
		t.Fatalf("compatibility: %+v", r[0])
	}
	if r := cl.SetMode(ctx, sr.ModeReadOnly, "users-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := cl.CreateSchema(ctx, "users-value", sr.Schema{Schema: bad}); !errors.As(err, &re) || re.ErrorCode != 42205 {
		t.Fatalf("read-only create: %v", err)
	}
	if r := cl.Mode(ctx, "users-value"); r[0].Err != nil || r[0].Mode != sr.ModeReadOnly {
		t.Fatalf("mode: %+v", r[0])
	}

	// Serde: the Confluent wire format with a schema fetched from the registry.
	type user struct {
		Name string `avro:"name"`
		Age  int    `avro:"age"`
	}
	got, err := cl.SchemaByID(ctx, s2.ID)
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(got.Schema)
	var serde sr.Serde
	serde.Register(s2.ID, user{},
		sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(schema, v) }),
		sr.DecodeFn(func(b []byte, v any) error { return avro.Unmarshal(schema, b, v) }))
	b, err := serde.Encode(user{Name: "ada", Age: 36})
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 0 || b[4] != byte(s2.ID) {
		t.Fatalf("wire header % x", b[:5])
	}
	var back user
	if err := serde.Decode(b, &back); err != nil || back != (user{"ada", 36}) {
		t.Fatalf("decode: %+v %v", back, err)
	}

	if r := cl.ResetMode(ctx, "users-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := cl.DeleteSubject(ctx, "users-value", sr.HardDelete); !errors.As(err, &re) || re.ErrorCode != 40405 {
		t.Fatalf("hard delete first: %v", err)
	}
	if vs, err := cl.DeleteSubject(ctx, "users-value", sr.SoftDelete); err != nil || !reflect.DeepEqual(vs, []int{1, 2}) {
		t.Fatalf("soft delete: %v %v", vs, err)
	}
	if vs, err := cl.DeleteSubject(ctx, "users-value", sr.HardDelete); err != nil || !reflect.DeepEqual(vs, []int{1, 2}) {
		t.Fatalf("hard delete: %v %v", vs, err)
	}
}
