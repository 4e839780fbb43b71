package testenv

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A real PostgreSQL from the Debian package, started once per test
// binary in a temporary folder on a loopback port: Postgres starts it on
// first use, StopPostgres (from TestMain) stops it and removes the folder.
// postgres refuses to run as root, so as root it runs as the system user
// postgres, which the package creates.

var pg struct {
	once sync.Once
	url  string
	err  error
	cmd  *exec.Cmd
	dir  string
}

// pgBin is where Debian installs PostgreSQL 15's server programs.
func pgBin(name string) string {
	for _, dir := range []string{"/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Postgres returns the URL of a database of its own for the test (created
// in the shared server). Without PostgreSQL it skips, or fails in CI,
// where .ci/run installs it.
func Postgres(t testing.TB) string {
	t.Helper()
	pg.once.Do(startPostgres)
	if pg.err != nil {
		msg := "PostgreSQL cannot be started for the tests (apt-get install postgresql): " + pg.err.Error()
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	name := fmt.Sprintf("t%d_%d", time.Now().UnixNano(), os.Getpid())
	out, err := exec.Command(pgBin("psql"), pg.url+"/postgres", "-v", "ON_ERROR_STOP=1", "-qc", "CREATE DATABASE "+name).CombinedOutput()
	if err != nil {
		t.Fatalf("creating database %s: %v\n%s", name, err, out)
	}
	return pg.url + "/" + name
}

func startPostgres() {
	initdb, postgres := pgBin("initdb"), pgBin("postgres")
	if initdb == "" || postgres == "" || pgBin("psql") == "" {
		pg.err = fmt.Errorf("initdb, postgres or psql not found")
		return
	}
	dir, err := os.MkdirTemp("", "toolshelf-pg")
	if err != nil {
		pg.err = err
		return
	}
	pg.dir = dir
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			pg.err = fmt.Errorf("running as root and there is no user postgres: %v", err)
			return
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			pg.err = err
			return
		}
	}
	data := filepath.Join(dir, "data")
	run := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "LC_ALL=C"}
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return cmd
	}
	if out, err := run(initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		pg.err = fmt.Errorf("initdb: %v\n%s", err, out)
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		pg.err = err
		return
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var logs bytes.Buffer
	pg.cmd = run(postgres, "-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", dir, "-c", "fsync=off", "-c", "max_connections=200")
	pg.cmd.Stdout, pg.cmd.Stderr = &logs, &logs
	if err := pg.cmd.Start(); err != nil {
		pg.err = err
		return
	}
	pg.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d", port)
	deadline := time.Now().Add(Timeout(30 * time.Second))
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			if exec.Command(pgBin("pg_isready"), "-h", "127.0.0.1", "-p", strconv.Itoa(port)).Run() == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			pg.err = fmt.Errorf("postgres did not accept connections within %v:\n%s", Timeout(30*time.Second), logs.String())
			StopPostgres()
			return
		}
		time.Sleep(50 * time.Millisecond) // polling the server's start: nothing to wait on
	}
}

// StopPostgres stops the server Postgres started, if any, and removes its
// folder. Call it from TestMain after m.Run.
func StopPostgres() {
	if pg.cmd != nil && pg.cmd.Process != nil {
		pg.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
		done := make(chan struct{})
		go func() { pg.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(Timeout(10 * time.Second)):
			pg.cmd.Process.Kill()
		}
		pg.cmd = nil
	}
	if pg.dir != "" {
		os.RemoveAll(pg.dir)
		pg.dir = ""
	}
}

// Main runs a package's tests and then stops the PostgreSQL server they
// may have started: a TestMain of os.Exit(testenv.Main(m)).
func Main(m *testing.M) int {
	defer StopPostgres()
	return m.Run()
}
