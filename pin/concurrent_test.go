package pin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// writerEnv makes this test binary a process that pins one tool into a
// lock file and saves it: "PATH TOOL".
const writerEnv = "TOOLSHELF_PIN_TEST_WRITER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(writerEnv); spec != "" {
		var path, tool string
		fmt.Sscan(spec, &path, &tool)
		l, err := Open(path, "")
		if err == nil {
			d, _ := Canonical([]byte(`{"name":"` + tool + `"}`))
			l.Judge("s", tool, d, nil)
			err = l.Save()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Eight processes saving one lock file at once lose no pin, trial after
// trial: each save reads, merges and renames under the folder's lock.
func TestConcurrentSavesKeepEveryPin(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const writers, trials = 8, 15
	for trial := range trials {
		path := filepath.Join(t.TempDir(), FileName)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				cmd := exec.Command(exe)
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s tool%d", writerEnv, path, i))
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("writer %d: %v\n%s", i, err, out)
				}
			})
		}
		wg.Wait()
		l, err := Open(path, TrustApprove)
		if err != nil {
			t.Fatal(err)
		}
		pinned, _ := l.Pinned("s")
		if len(pinned) != writers {
			t.Fatalf("trial %d: %d of %d pins kept", trial+1, len(pinned), writers)
		}
	}
}
