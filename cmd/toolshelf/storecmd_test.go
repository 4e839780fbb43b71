package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
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
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sealedOld, err := signin.OpenShared(db, oldKey)
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

// doctor checks the configuration's identity provider: a real one
// answers (with introspection and the exchange grant for the gateway's
// client), one that does not answer is named with why.
func TestDoctorChecksIdentityProvider(t *testing.T) {
	idp := testenv.StartIDP(t, nil)
	dir := t.TempDir()
	for _, tc := range []struct {
		issuer string
		ok     bool
	}{{idp.Issuer, true}, {"http://127.0.0.1:1", false}} {
		cfg := dir + "/servers.json"
		data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{},
			"identity": map[string]any{"issuer": tc.issuer, "audience": "toolshelf", "clientId": testenv.GatewayClient, "clientSecret": testenv.GatewaySecret}})
		if err := os.WriteFile(cfg, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, "doctor", "--config", cfg, "--json")
		var rep doctorReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Identity == nil {
			t.Fatalf("doctor: %v %s %s", err, r.stdout, r.stderr)
		}
		c := rep.Identity
		if c.OK != tc.ok || (tc.ok && (!c.Introspection || !c.Exchange)) || (!tc.ok && c.Error == "") {
			t.Errorf("the check of %s: %+v", tc.issuer, c)
		}
		text := runCLI(t, "doctor", "--config", cfg)
		if want := map[bool]string{true: "answers", false: "does not answer"}[tc.ok]; !strings.Contains(text.stdout, "Identity provider "+tc.issuer+" "+want) {
			t.Errorf("doctor's text for %s:\n%s", tc.issuer, text.stdout)
		}
	}
}
