// Command scale measures toolshelf at registry scale, a process per
// catalog size: it makes catalogs of 1,000, 10,000 and 100,000 distinct
// tools from the built-in one (package bigcatalog, the same catalogs
// every time), writes each as a catalog file, and runs itself again on
// each file as a fresh process that loads the file as `toolshelf serve
// --catalog` does, builds the default search index and runs the search
// benchmark's queries. It prints load and build time, query p50 and p99,
// and the process's peak resident memory:
//
//	go run ./scripts/scale [-sizes 1000,10000,100000] [-searches 800] [-dir DIR]
//
// docs/benchmarks.md's scale table comes from it.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/bigcatalog"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/search"
)

// childEnv names the catalog file a child process measures.
const childEnv = "TOOLSHELF_SCALE_FILE"

// figures is what a child measures.
type figures struct {
	Tools    int     `json:"tools"`
	LoadMS   float64 `json:"load_ms"`
	BuildMS  float64 `json:"build_ms"`
	P50US    float64 `json:"p50_us"`
	P99US    float64 `json:"p99_us"`
	HeapMiB  float64 `json:"heap_mib"` // live heap after the searches
	Searches int     `json:"searches"`
	// PeakMiB is the process's own peak resident memory (VmHWM), 0 where
	// /proc does not say. Not the parent's rusage of it: on exec Linux
	// keeps the peak of the memory the child started in, which is its
	// parent's (the clone before exec), so a parent that peaked higher
	// (one that had just made a catalog) would be counted.
	PeakMiB float64 `json:"peak_mib"`
}

func main() {
	if file := os.Getenv(childEnv); file != "" {
		searches, _ := strconv.Atoi(os.Getenv(childEnv + "_SEARCHES"))
		f, err := measure(file, max(searches, 1))
		if err != nil {
			fmt.Fprintln(os.Stderr, "scale:", err)
			os.Exit(1)
		}
		json.NewEncoder(os.Stdout).Encode(f)
		return
	}
	sizes := flag.String("sizes", "1000,10000,100000", "catalog `SIZES` in tools, comma-separated")
	searches := flag.Int("searches", 800, "searches per size, cycling through the benchmark queries")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "toolshelf-scale"), "`FOLDER` for the catalog files (kept, and reused when present)")
	flag.Parse()
	if err := run(*sizes, *searches, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(sizes string, searches int, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("%d CPUs, %s, GOGC %s\n\n", runtime.NumCPU(), runtime.Version(), cmp.Or(os.Getenv("GOGC"), "100"))
	fmt.Println("| tools | file | load | build | query p50 | query p99 | live heap | peak RSS |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("-sizes: %q is not a number of tools", s)
		}
		file, err := catalogFile(dir, n)
		if err != nil {
			return err
		}
		fi, err := os.Stat(file)
		if err != nil {
			return err
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), childEnv+"="+file, fmt.Sprintf("%s_SEARCHES=%d", childEnv, searches))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("measuring %d tools: %v", n, err)
		}
		var f figures
		if err := json.Unmarshal(out, &f); err != nil {
			return fmt.Errorf("measuring %d tools: %v", n, err)
		}
		if f.Tools != n {
			return fmt.Errorf("the catalog file %s holds %d tools, not %d", file, f.Tools, n)
		}
		rss := peakOf(f, cmd)
		fmt.Printf("| %d | %.0f MB | %.0f ms | %.0f ms | %.0f µs | %.0f µs | %.0f MiB | %.0f MiB |\n",
			n, float64(fi.Size())/1e6, f.LoadMS, f.BuildMS, f.P50US, f.P99US, f.HeapMiB, rss)
	}
	return nil
}

// catalogFile returns the catalog file of n tools in dir, writing it
// first unless it is there.
func catalogFile(dir string, n int) (string, error) {
	file := filepath.Join(dir, fmt.Sprintf("catalog-%d.json", n))
	if _, err := os.Stat(file); err == nil {
		return file, nil
	}
	fmt.Fprintf(os.Stderr, "making a catalog of %d tools in %s\n", n, file)
	c, err := bigcatalog.Make(builtin.Catalog(), n)
	if err != nil {
		return "", err
	}
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	if err := c.Encode(f); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	// The catalog made is garbage now; give its memory back. A child
	// started while this process holds it would count it in its own peak:
	// Linux starts a child in its parent's memory (the clone before exec),
	// and its peak RSS is of that moment too.
	c = nil
	runtime.GC()
	debug.FreeOSMemory()
	return file, os.Rename(tmp, file)
}

// measure loads a catalog file, indexes it and searches it.
func measure(file string, searches int) (figures, error) {
	start := time.Now()
	f, err := os.Open(file)
	if err != nil {
		return figures{}, err
	}
	c, err := catalog.Decode(f)
	f.Close()
	if err != nil {
		return figures{}, catalog.InFile(file, err)
	}
	loaded := time.Now()
	e, err := search.New(search.DefaultEngine, c)
	if err != nil {
		return figures{}, err
	}
	built := time.Now()
	ctx := context.Background()
	took := make([]time.Duration, searches)
	for i := range took {
		t := time.Now()
		if _, err := e.Search(ctx, bigcatalog.Queries[i%len(bigcatalog.Queries)], 0); err != nil {
			return figures{}, err
		}
		took[i] = time.Since(t)
	}
	slices.Sort(took)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(e)
	return figures{
		Tools:    c.Len(),
		LoadMS:   ms64(loaded.Sub(start)),
		BuildMS:  ms64(built.Sub(loaded)),
		P50US:    float64(took[len(took)/2].Microseconds()),
		P99US:    float64(took[len(took)*99/100].Microseconds()),
		HeapMiB:  float64(ms.HeapAlloc) / (1 << 20),
		Searches: searches,
		PeakMiB:  ownPeak(),
	}, nil
}

// vmHWM is /proc/self/status's line of the process's peak RSS.
var vmHWM = regexp.MustCompile(`(?m)^VmHWM:\s+(\d+) kB$`)

// ownPeak is the process's peak resident memory in MiB, 0 where /proc
// does not say.
func ownPeak() float64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	m := vmHWM.FindSubmatch(st)
	if m == nil {
		return 0
	}
	kb, _ := strconv.ParseFloat(string(m[1]), 64)
	return kb / 1024
}

// peakOf is a measured child's peak RSS in MiB: its own word, else its
// rusage.
func peakOf(f figures, cmd *exec.Cmd) float64 {
	if f.PeakMiB > 0 {
		return f.PeakMiB
	}
	return float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024 // KiB on Linux
}

func ms64(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
