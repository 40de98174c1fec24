package broker

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/strandmq/strand/internal/schemareg"
	"github.com/strandmq/strand/internal/vfs"
)

// register posts an Avro schema to h and returns the answer's status and body.
func register(t testing.TB, h http.Handler, subject, schema string) (int, string) {
	t.Helper()
	body := `{"schema":` + quoteJSON(schema) + `}`
	req := httptest.NewRequest("POST", "/subjects/"+subject+"/versions", strings.NewReader(body))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code, strings.TrimSpace(w.Body.String())
}

func quoteJSON(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

const avroUser = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`
const avroUser2 = `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`

// The registry's records live in _schemas: a restart reads them back, and
// ids and versions go on from where they were.
func TestSchemaStoreSurvivesRestart(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		b := open(t, fs, dir)
		h := schemareg.NewHandler(b.Schemas())
		if code, body := register(t, h, "users-value", avroUser); code != 200 || body != `{"id":1}` {
			t.Fatalf("register: %d %s", code, body)
		}
		if code, body := register(t, h, "users-value", avroUser2); code != 200 || body != `{"id":2}` {
			t.Fatalf("register v2: %d %s", code, body)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b = open(t, fs, dir)
		defer b.Close()
		h = schemareg.NewHandler(b.Schemas())
		c, err := b.Schemas().Compiled(2)
		if err != nil || !c.HasSubject("users-value") {
			t.Fatalf("id 2 after restart: %v %v", c, err)
		}
		if code, body := register(t, h, "other-value", `{"type":"string"}`); code != 200 || body != `{"id":3}` {
			t.Fatalf("register after restart: %d %s", code, body)
		}
		p, err := b.Partition(SchemasTopic, 0)
		if err != nil {
			t.Fatal(err)
		}
		if hw := p.HighWatermark(); hw != 3 {
			t.Fatalf("_schemas holds %d records, want 3", hw)
		}
	})
}

// A write decided on a stale state (another node wrote in between) lands
// at another offset than planned: it is ignored, and Write says so.
func TestSchemaStoreStaleWriteConflicts(t *testing.T) {
	b := open(t, vfs.NewMem(), "/data")
	defer b.Close()
	s := b.Schemas()
	subj := "s"
	rec := func(id int, seq int64) schemareg.Record {
		return schemareg.Record{
			Key:    schemareg.Key{KeyType: schemareg.KeySchema, Subject: &subj, Version: 1, Magic: 1, Seq: &seq},
			Schema: &schemareg.SchemaValue{Subject: subj, Version: 1, ID: id, Schema: `"string"`},
		}
	}
	if err := s.Write(context.Background(), rec(1, 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), rec(7, 0)); !errors.Is(err, schemareg.ErrConflict) {
		t.Fatalf("stale write: %v, want ErrConflict", err)
	}
	var id int
	s.View(func(st *schemareg.State) {
		if c, err := st.Compile(1); err == nil {
			id = c.ID
		}
	})
	if id != 1 {
		t.Fatal("the stale write replaced the first")
	}
	if _, err := s.Compiled(7); !errors.Is(err, schemareg.ErrUnknownID) {
		t.Fatalf("id 7: %v, want unknown", err)
	}
}

// Clients cannot write to _schemas or delete it.
func TestSchemasTopicIsInternal(t *testing.T) {
	b := open(t, vfs.NewMem(), "/data")
	defer b.Close()
	if _, err := b.ProduceRecords(context.Background(), SchemasTopic, 0, nil); !errors.Is(err, ErrInvalidTopic) {
		t.Fatalf("produce: %v", err)
	}
	if err := b.DeleteTopic(SchemasTopic); !errors.Is(err, ErrInternalTopic) {
		t.Fatalf("delete: %v", err)
	}
}
