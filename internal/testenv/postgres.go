package testenv

import (
	"bytes"
	"context"
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

	"github.com/jackc/pgx/v5/pgxpool"
)

// A real PostgreSQL from the Debian package, started once per test
// binary in a temporary folder on a loopback port: Postgres starts it on
// first use, StopPostgres (from TestMain) stops it and removes the folder.
// postgres refuses to run as root, so as root it runs as the system user
// postgres, which the package creates. A test that restarts its server
// has one of its own (OwnPostgres).

// PGServer is one PostgreSQL server.
type PGServer struct {
	url  string // without a database
	dir  string
	port int
	cred *syscall.Credential
	cmd  *exec.Cmd
	logs bytes.Buffer
}

var pg struct {
	once sync.Once
	srv  *PGServer
	err  error
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

// skipWithout skips the test, or fails it in CI (where .ci/run installs
// PostgreSQL), when the server could not be started.
func skipWithout(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := "PostgreSQL cannot be started for the tests: " + err.Error()
	if pgBin("initdb") == "" {
		msg = "PostgreSQL is not installed (apt-get install postgresql): " + err.Error()
	}
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Postgres returns the URL of a database of its own for the test (created
// in the shared server). Without PostgreSQL it skips, or fails in CI,
// where .ci/run installs it.
func Postgres(t testing.TB) string {
	t.Helper()
	pg.once.Do(func() { pg.srv, pg.err = startPostgres() })
	skipWithout(t, pg.err)
	return pg.srv.Database(t)
}

// OwnPostgres starts a PostgreSQL server for the test alone, stopped when
// the test ends: one the test may restart.
func OwnPostgres(t testing.TB) *PGServer {
	t.Helper()
	srv, err := startPostgres()
	skipWithout(t, err)
	t.Cleanup(srv.stop)
	return srv
}

// Database creates a database of the test's own in the server and returns
// its URL.
func (s *PGServer) Database(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", time.Now().UnixNano(), os.Getpid())
	out, err := exec.Command(pgBin("psql"), s.url+"/postgres", "-v", "ON_ERROR_STOP=1", "-qc", "CREATE DATABASE "+name).CombinedOutput()
	if err != nil {
		t.Fatalf("creating database %s: %v\n%s", name, err, out)
	}
	return s.url + "/" + name
}

// Restart stops the server (a fast shutdown: every connection is cut) and
// starts it again on the same port with the same data.
func (s *PGServer) Restart(t testing.TB) {
	t.Helper()
	s.halt()
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
}

// Down stops the server (a fast shutdown) until Up.
func (s *PGServer) Down() { s.halt() }

// Up starts the server Down stopped, on the same port with the same data.
func (s *PGServer) Up(t testing.TB) {
	t.Helper()
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
}

func startPostgres() (*PGServer, error) {
	initdb, postgres := pgBin("initdb"), pgBin("postgres")
	if initdb == "" || postgres == "" || pgBin("psql") == "" {
		return nil, fmt.Errorf("initdb, postgres or psql not found")
	}
	dir, err := os.MkdirTemp("", "toolshelf-pg")
	if err != nil {
		return nil, err
	}
	s := &PGServer{dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			s.stop()
			return nil, fmt.Errorf("running as root and there is no user postgres: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			s.stop()
			return nil, err
		}
	}
	if out, err := s.command(initdb, "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		s.stop()
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.stop()
		return nil, err
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	s.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d", s.port)
	if err := s.run(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// command is a PostgreSQL program run in the server's folder, as the
// user postgres when the tests run as root.
func (s *PGServer) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "LC_ALL=C"}
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

// run starts the server and waits until it accepts connections.
func (s *PGServer) run() error {
	s.logs.Reset()
	s.cmd = s.command(pgBin("postgres"), "-D", filepath.Join(s.dir, "data"), "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-k", s.dir, "-c", "fsync=off", "-c", "max_connections=200")
	s.cmd.Stdout, s.cmd.Stderr = &s.logs, &s.logs
	if err := s.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(Timeout(30 * time.Second))
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.port), time.Second)
		if err == nil {
			c.Close()
			if exec.Command(pgBin("pg_isready"), "-h", "127.0.0.1", "-p", strconv.Itoa(s.port)).Run() == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			s.halt()
			return fmt.Errorf("postgres did not accept connections within %v:\n%s", Timeout(30*time.Second), s.logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling the server's start: nothing to wait on
	}
}

// halt stops the server process, if it runs.
func (s *PGServer) halt() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(Timeout(10 * time.Second)):
		s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// stop halts the server and removes its folder.
func (s *PGServer) stop() {
	s.halt()
	if s.dir != "" {
		os.RemoveAll(s.dir)
		s.dir = ""
	}
}

// StopPostgres stops the shared server Postgres started, if any, and
// removes its folder. Call it from TestMain after m.Run.
func StopPostgres() {
	if pg.srv != nil {
		pg.srv.stop()
	}
}

// Main runs a package's tests and then stops the PostgreSQL server they
// may have started: a TestMain of os.Exit(testenv.Main(m)).
func Main(m *testing.M) int {
	defer StopPostgres()
	return m.Run()
}

// SQL connects to the database at url as anyone with the store's
// password could, for tests that read the store's tables or tamper with
// them: a pool, which connects again after the database was down. It
// closes when the test ends.
func SQL(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(pool.Close)
	return pool
}
