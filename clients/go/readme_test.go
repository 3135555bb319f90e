package httpdns

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's Go setup, as written: its go mod edit line and its import, in a module of their
// own, build with the fragment (GOPROXY=off: nothing is fetched).
func TestTheReadmesGoSetupBuilds(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(string(readme), "<!-- example: go fragment -->\n```go\n")
	fragment, _, closed := strings.Cut(rest, "```\n")
	if !found || !closed {
		t.Fatal("the README has no go fragment")
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	var edit, importLine string
	for _, line := range strings.Split(fragment, "\n") {
		text := strings.TrimSpace(strings.TrimPrefix(line, "//"))
		if strings.HasPrefix(text, "go mod edit ") {
			edit = strings.ReplaceAll(strings.TrimPrefix(text, "go mod edit "), "/path/to/clients/go", here)
		}
		if _, spec, ok := strings.Cut(text, "import "); ok && strings.HasPrefix(line, "//") {
			importLine = strings.TrimSuffix(spec, ".")
		}
	}
	if edit == "" || importLine == "" {
		t.Fatalf("no go mod edit line or import in the fragment:\n%s", fragment)
	}
	module := t.TempDir()
	run := func(arguments ...string) {
		command := exec.Command("go", arguments...)
		command.Dir = module
		command.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
		if output, err := command.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(arguments, " "), err, output)
		}
	}
	run("mod", "init", "example.test/setup")
	run(append([]string{"mod", "edit"}, strings.Fields(edit)...)...)
	program := "package main\n\nimport (\n\t\"net/http\"\n\n\t" + importLine + "\n)\n\nfunc main() {\n" + fragment +
		"\t_, _ = err, client\n}\n"
	if err := os.WriteFile(filepath.Join(module, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	run("build", "-o", os.DevNull, ".")
}
