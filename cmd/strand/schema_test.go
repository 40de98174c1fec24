package main

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/strandmq/strand"
	"github.com/strandmq/strand/internal/testcert"
	"github.com/strandmq/strand/internal/testnet"
)

// TestSchemaCLI registers, checks, lists and gets schemas with the strand
// schema commands against a broker's built-in registry.
func TestSchemaCLI(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	reg := "--registry=http://" + b.SchemaRegistryAddr()
	v1 := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`
	v2 := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"note","type":"string","default":""}]}`
	bad := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"zip","type":"int"}]}`

	if out := ok(t, b.Addr(), v1, "schema", "register", "orders-value", "-f", "-", reg).stdout; out != "registered orders-value version 1, id 1 (AVRO)\n" {
		t.Fatalf("register: %q", out)
	}
	if out := ok(t, b.Addr(), v2, "schema", "check", "orders-value", "-f", "-", reg).stdout; out != "compatible with orders-value\n" {
		t.Fatalf("check v2: %q", out)
	}
	r := runCLI(t, b.Addr(), bad, "schema", "check", "orders-value", "-f", "-", reg)
	if r.code != 1 || !strings.HasPrefix(r.stdout, "NOT compatible with orders-value:\n  ") {
		t.Fatalf("check incompatible: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, b.Addr(), bad, "schema", "register", "orders-value", "-f", "-", reg)
	if r.code != 1 || !strings.Contains(r.stderr, "incompatible") {
		t.Fatalf("register incompatible: %d %q", r.code, r.stderr)
	}
	var reg2 struct {
		Subject     string
		Version, ID int
		Type        string
	}
	if err := json.Unmarshal([]byte(ok(t, b.Addr(), v2, "schema", "register", "orders-value", "-f", "-", reg, "-o", "json").stdout), &reg2); err != nil ||
		reg2.Version != 2 || reg2.ID != 2 || reg2.Type != "AVRO" {
		t.Fatalf("register -o json: %+v %v", reg2, err)
	}
	ok(t, b.Addr(), `syntax = "proto3"; message P { string s = 1; }`, "schema", "register", "p-value", "-f", "-", "-t", "protobuf", reg)

	out := ok(t, b.Addr(), "", "schema", "list", reg).stdout
	want := "SUBJECT       VERSION  ID  TYPE\norders-value  2        2   AVRO\np-value       1        3   PROTOBUF\n"
	if out != want {
		t.Fatalf("list:\n%s\nwant:\n%s", out, want)
	}
	var rows []schemaRow
	if err := json.Unmarshal([]byte(ok(t, b.Addr(), "", "schema", "list", "orders-value", reg, "-o", "json").stdout), &rows); err != nil ||
		len(rows) != 2 || rows[0] != (schemaRow{"orders-value", 1, 1, "AVRO"}) || rows[1] != (schemaRow{"orders-value", 2, 2, "AVRO"}) {
		t.Fatalf("list orders-value: %+v %v", rows, err)
	}
	if out := ok(t, b.Addr(), "", "schema", "get", "orders-value", "1", reg).stdout; out != v1+"\n" {
		t.Fatalf("get version 1: %q", out)
	}
	var got struct {
		ID     int
		Schema string
	}
	if err := json.Unmarshal([]byte(ok(t, b.Addr(), "", "schema", "get", "--id", "2", reg, "-o", "json").stdout), &got); err != nil || got.Schema != v2 {
		t.Fatalf("get --id 2: %+v %v", got, err)
	}
	r = runCLI(t, b.Addr(), "", "schema", "get", "nope-value", reg)
	if r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("get unknown subject: %d %q", r.code, r.stderr)
	}
	r = runCLI(t, b.Addr(), "", "schema", "list", "--registry", "http://"+testnet.FreeAddr(t))
	if r.code != 3 || !strings.Contains(r.stderr, "no schema registry at") {
		t.Fatalf("no registry: %d %q", r.code, r.stderr)
	}
}

// TestConsumeDecode: consume --decode prints Avro and Protobuf values in
// Confluent's wire format as JSON, with schemas from the registry; values
// without the wire format are printed as they are.
func TestConsumeDecode(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := sr.NewClient(sr.URLs("http://" + b.SchemaRegistryAddr()))
	if err != nil {
		t.Fatal(err)
	}
	avroSchema := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},{"name":"item","type":"string"}]}`
	as, err := cl.CreateSchema(ctx, "decoded-value", sr.Schema{Schema: avroSchema})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := cl.CreateSchema(ctx, "decoded-proto-value", sr.Schema{Schema: `syntax = "proto3"; message A { int64 n = 1; } message P { string s = 1; }`, Type: sr.TypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	var serde sr.Serde
	sch := avro.MustParse(avroSchema)
	serde.Register(as.ID, map[string]any{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(sch, v) }))
	avroValue, err := serde.Encode(map[string]any{"id": int64(7), "item": "book"})
	if err != nil {
		t.Fatal(err)
	}
	protoValue := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(ps.ID)), 0x02, 0x02, 0x0a, 0x02, 'h', 'i') // message P (index 1), s = "hi"
	if err := b.CreateTopic("decoded", 1, nil); err != nil {
		t.Fatal(err)
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("decoded"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if err := kc.ProduceSync(ctx, &kgo.Record{Value: avroValue}, &kgo.Record{Value: protoValue}, &kgo.Record{Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out := ok(t, b.Addr(), "", "consume", "decoded", "--decode", "--registry", "http://"+b.SchemaRegistryAddr(), "-f", "%o %s\n").stdout
	if want := "0 {\"id\":7,\"item\":\"book\"}\n1 {\"s\":\"hi\"}\n2 plain\n"; out != want {
		t.Fatalf("consume --decode:\n%s\nwant:\n%s", out, want)
	}
	bad := append(binary.BigEndian.AppendUint32([]byte{0}, uint32(as.ID)), 0x02)
	if err := kc.ProduceSync(ctx, &kgo.Record{Value: bad}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, b.Addr(), "", "consume", "decoded", "--decode", "--registry", "http://"+b.SchemaRegistryAddr(), "--from", "3")
	if r.code != 1 || !strings.Contains(r.stderr, "decoded[0] offset 3: value: schema id 1 (AVRO): avro: payload ends early") {
		t.Fatalf("undecodable value: %d %q", r.code, r.stderr)
	}
}

// TestSchemaCLIOverHTTPS: strand schema reaches a registry served over
// HTTPS beyond loopback that requires authentication — 401 without a user,
// listed with --registry-ca, --registry-user and the password from
// STRAND_SCHEMA_REGISTRY_PASSWORD.
func TestSchemaCLIOverHTTPS(t *testing.T) {
	certs := testcert.MustSet(t, "cli")
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, certs.CA.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := strand.Start(context.Background(), strand.Config{Dir: t.TempDir(), Logger: slog.New(slog.DiscardHandler),
		SASLUsers: map[string]string{"reg": "regpw"}, SchemaRegistryAddr: "0.0.0.0:0",
		HTTPTLS: &tls.Config{Certificates: []tls.Certificate{certs.Server.TLS}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, port, _ := net.SplitHostPort(b.SchemaRegistryAddr())
	reg := "--registry=https://127.0.0.1:" + port
	t.Setenv("STRAND_SCHEMA_REGISTRY_PASSWORD", "regpw")
	if r := runCLI(t, b.Addr(), "", "schema", "list", reg, "--registry-ca", ca); r.code == 0 || !strings.Contains(r.stderr, "authentication required") {
		t.Fatalf("without a user: exit %d %q", r.code, r.stderr)
	}
	v1 := `{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}`
	ok(t, b.Addr(), v1, "schema", "register", "orders-value", "-f", "-", reg, "--registry-ca", ca, "--registry-user", "reg")
	if out := ok(t, b.Addr(), "", "schema", "list", reg, "--registry-ca", ca, "--registry-user", "reg").stdout; !strings.Contains(out, "orders-value") {
		t.Fatalf("list over HTTPS: %q", out)
	}
}
