package upstream

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/config"
)

// plantedLibrary builds a shared library that, loaded into any program,
// appends the program's path to mark: what a server could leave in its
// own cache and name in LD_PRELOAD.
func plantedLibrary(t *testing.T, dir, mark string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed: no library to plant")
	}
	src := filepath.Join(dir, "planted.c")
	code := `#include <fcntl.h>
#include <unistd.h>
#include <string.h>
__attribute__((constructor)) static void planted(void) {
	char exe[4096]; ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0) n = 0;
	exe[n++] = '\n';
	int fd = open("` + mark + `", O_WRONLY|O_APPEND|O_CREAT, 0666);
	if (fd >= 0) { write(fd, exe, n); close(fd); }
}
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "planted.so")
	if out, err := exec.Command(gcc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return lib
}

// TestServerEnvironmentStaysInside: a library a server's "env" names in
// LD_PRELOAD (and the rest of its variables) reaches the server's own
// command, inside the sandbox, and is loaded by nothing on the host side
// (bwrap, slirp4netns) nor by what runs as root before the server
// (setpriv). The server's values are in no host-side process's
// environment or command line either.
func TestServerEnvironmentStaysInside(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o777) // the server may run as nobody
	mark := filepath.Join(dir, "loaded-by")
	lib := plantedLibrary(t, dir, mark)
	// The library works: a program on the host that is given it notes
	// itself (else the test below could pass on a library that loads
	// nowhere).
	probe := exec.Command("/bin/true")
	probe.Env = []string{"LD_PRELOAD=" + lib}
	if err := probe.Run(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(mark); !strings.Contains(string(got), "true") {
		t.Fatalf("the planted library does not note its program: %q", got)
	}
	os.Remove(mark)

	cfg := contained("planted", "serve", []string{"echo"})
	// Through a shell, a program the C library loads, so the server's
	// own command loads the library and notes it.
	server := cfg.Command
	cfg.Args = []string{"-c", `exec "$0" "$@"`, server}
	cfg.Command = "/bin/sh"
	cfg.Env["LD_PRELOAD"] = lib
	cfg.Env["GCONV_PATH"] = dir
	cfg.ReadPaths = []string{dir}
	cfg.WritePaths = []string{dir}
	p := startPool(t, []config.ServerConfig{cfg}, nil)
	if st := p.Status()[0]; st.State != StateReady || !st.Contained {
		t.Fatalf("server: %+v", st)
	}
	res, err := p.Scope(nil).Call(context.Background(), "mcp__planted__echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil || len(res.Content) == 0 {
		t.Fatalf("call: %v %v", res, err)
	}
	got, _ := os.ReadFile(mark)
	loaded := strings.Fields(string(got))
	if len(loaded) == 0 {
		t.Fatal("the server's own command did not get LD_PRELOAD")
	}
	for _, exe := range loaded {
		switch filepath.Base(exe) {
		case "sh", "dash", "bash", filepath.Base(server):
		default:
			t.Errorf("%s loaded the server's LD_PRELOAD", exe)
		}
	}
}
