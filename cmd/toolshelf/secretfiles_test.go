package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretFileVariables: $NAME_FILE gives a secret variable's value
// from a file; both set, an unreadable or an empty file is an error that
// names the variable and the file, never a value.
func TestSecretFileVariables(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	os.WriteFile(file, []byte("c2VhbGVkLWtleS0wMTIzNDU2Nzg5YWJjZGVm\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	env := func(kv ...string) func(string) string {
		return func(name string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == name {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	getenv, err := withSecretFiles(env(envStoreKey+"_FILE", file, "OTHER", "x"), &heldPaths{})
	if err != nil {
		t.Fatal(err)
	}
	if got := getenv(envStoreKey); got != "c2VhbGVkLWtleS0wMTIzNDU2Nzg5YWJjZGVm" {
		t.Errorf("$%s = %q", envStoreKey, got)
	}
	if getenv("OTHER") != "x" {
		t.Errorf("other variables are not passed through")
	}
	for _, c := range []struct {
		env  func(string) string
		want string
	}{
		{env(envAuthToken, "a", envAuthToken+"_FILE", file), "both $TOOLSHELF_AUTH_TOKEN and $TOOLSHELF_AUTH_TOKEN_FILE are set"},
		{env(envStore+"_FILE", filepath.Join(dir, "missing")), "$TOOLSHELF_STORE_FILE: open " + filepath.Join(dir, "missing")},
		{env(envProxyToken+"_FILE", empty), empty + " is empty"},
	} {
		_, err := withSecretFiles(c.env, &heldPaths{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
