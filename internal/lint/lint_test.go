package lint

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/strandmq/strand"

// layers lists Strand's packages from the top of DESIGN.md's drawing to the
// bottom. A package may import only packages on a lower line, never a sibling
// on its own line. Packages not yet listed fail the test, so the map stays true.
var layers = [][]string{
	{"cmd/strand", "test/soak"},
	{""}, // the module root: the embed API
	{"internal/console"},
	{"internal/metrics"},
	{"internal/kafka"},
	{"internal/broker"},
	{"internal/schemareg/schemastore"},
	{"internal/partition/fetcher", "internal/txn/txncoord", "internal/dlq", "internal/share/sharenode"},
	{"internal/partition"},
	{"internal/topicconfig", "internal/datadir"},
	{"internal/cluster/quorum"},
	{"internal/cluster"},
	{"internal/replica"},
	{"internal/group", "internal/txn", "internal/share"},
	{"internal/group/consumer"},
	{"internal/producer"},
	{"internal/ingest"},
	{"internal/compact"},
	{"internal/tiered/storetest"},
	{"internal/tiered"},
	{"internal/partlog"},
	{"internal/coordlog"},
	{"internal/record"},
	{"internal/httpauth"},
	{"internal/assign", "internal/acl", "internal/schemareg", "internal/partitioner", "internal/vfs", "internal/vnet", "internal/testcert", "internal/testnet", "internal/sasl", "internal/wire"},
	{"internal/nodetls"},
	{"internal/lint"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Doc        string
	Name       string
}

func listPackages(t *testing.T) []pkg {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
}

func TestImportLayering(t *testing.T) {
	level := map[string]int{}
	for i, line := range layers {
		for _, p := range line {
			level[p] = i
		}
	}
	for _, p := range listPackages(t) {
		from := rel(p.ImportPath)
		if strings.HasPrefix(from, "bench") {
			continue
		}
		lf, ok := level[from]
		if !ok {
			t.Errorf("package %q is not on DESIGN.md's map (internal/lint layers)", from)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := rel(imp)
			lt, ok := level[to]
			if !ok {
				continue // reported above as unmapped
			}
			if lt <= lf {
				t.Errorf("%s imports %s: a package may import only lower layers", from, to)
			}
		}
	}
}

func TestPackageDocs(t *testing.T) {
	for _, p := range listPackages(t) {
		if p.Name == "main" {
			continue
		}
		if len(strings.TrimSpace(p.Doc)) < 20 {
			t.Errorf("package %s has no package doc comment saying what it owns", rel(p.ImportPath))
		}
	}
}
