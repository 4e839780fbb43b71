package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/signin"
	"github.com/toolshelf/toolshelf/store"
)

// A fleet's sign-ins under another key: auth status lists them as
// unreadable (and exits 0), auth login with that key refuses, and store
// rotate-key seals them with the new key once both are given.
func TestStoreKeyRotation(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	oldKey, newKey := []byte("0123456789abcdef0123456789abcdef"), []byte("fedcba9876543210fedcba9876543210")
	b64 := base64.StdEncoding.EncodeToString
	db, err := store.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sealedOld, err := signin.OpenShared(ctx, db, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := sealedOld.Put(&signin.Record{Server: "remote", Resource: "https://remote.example.com/mcp", AccessToken: "secret-access-token"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envStore, url)
	t.Setenv(envStoreKey, b64(newKey))

	r := runCLI(t, "auth", "status", "--json")
	var status []authEntry
	if err := json.Unmarshal([]byte(r.stdout), &status); err != nil || r.code != 0 || len(status) != 1 || status[0].State != "unreadable" || !strings.Contains(status[0].Why, "another key") || strings.Contains(r.stdout, "secret-access-token") {
		t.Errorf("auth status with the new key alone: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "auth", "login", "--url", "https://other.example.com/mcp", "--no-browser")
	if r.code != 2 || !strings.Contains(r.stderr, "opens none of the 1 sign-ins") {
		t.Errorf("auth login with a key that opens nothing: %d %s", r.code, r.stderr)
	}

	r = runCLI(t, "store", "rotate-key")
	if r.code != 2 || !strings.Contains(r.stderr, "TOOLSHELF_STORE_OLD_KEY") {
		t.Errorf("rotate-key without the old key: %d %s", r.code, r.stderr)
	}
	t.Setenv(envStoreOldKey, b64(oldKey))
	r = runCLI(t, "store", "rotate-key")
	if r.code != 0 || !strings.Contains(r.stdout, "Sealed 1 sign-ins with the new key") {
		t.Fatalf("rotate-key: %d %s %s", r.code, r.stdout, r.stderr)
	}
	t.Setenv(envStoreOldKey, "")
	r = runCLI(t, "auth", "status", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &status); err != nil || len(status) != 1 || status[0].State != "signed-in" {
		t.Errorf("auth status with the new key after the rotation: %s %s", r.stdout, r.stderr)
	}
}
